#include "lumen/serve/request_queue.h"

#include <utility>

namespace lumen::serve {

Engine::RequestId RequestQueue::push(std::vector<int32_t> prompt, const RequestParams& params, Engine::OnText on_text,
                                     Engine::OnDone on_done, EngineMetrics& metrics) {
  auto r = std::make_shared<QueuedRequest>();
  r->prompt = std::move(prompt);
  r->params = params;
  r->on_text = std::move(on_text);
  r->on_done = std::move(on_done);
  r->id = next_id_++;
  queue_.push_back(r);
  metrics.queued = static_cast<int64_t>(queue_.size());
  return r->id;
}

std::shared_ptr<QueuedRequest> RequestQueue::take(Engine::RequestId id, EngineMetrics& metrics) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if ((*it)->id != id) continue;
    std::shared_ptr<QueuedRequest> r = *it;
    queue_.erase(it);
    metrics.queued = static_cast<int64_t>(queue_.size());
    ++metrics.requests_cancelled;
    return r;
  }
  return nullptr;
}

std::deque<std::shared_ptr<QueuedRequest>> RequestQueue::take_all(EngineMetrics& metrics) {
  std::deque<std::shared_ptr<QueuedRequest>> all;
  all.swap(queue_);
  metrics.queued = 0;
  metrics.requests_cancelled += static_cast<int64_t>(all.size());
  return all;
}

std::shared_ptr<QueuedRequest> RequestQueue::pop(EngineMetrics& metrics) {
  std::shared_ptr<QueuedRequest> r = queue_.front();
  queue_.pop_front();
  metrics.queued = static_cast<int64_t>(queue_.size());
  return r;
}

void tell_cancelled(const QueuedRequest& r) {
  if (r.on_done) r.on_done({FinishReason::Cancelled, static_cast<int64_t>(r.prompt.size()), 0, ""});
}

}  // namespace lumen::serve
