// What both engines keep of a submitted request, and their queue of requests
// not yet started. Not thread-safe: the engine's mutex guards the queue.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "lumen/serve/engine.h"

namespace lumen::serve {

struct QueuedRequest {
  Engine::RequestId id = 0;
  std::vector<int32_t> prompt;
  RequestParams params;
  Engine::OnText on_text;
  Engine::OnDone on_done;
  std::atomic<bool> cancelled{false};
};

class RequestQueue {
 public:
  // Queues a request under the next id (returned); counted in metrics.queued.
  Engine::RequestId push(std::vector<int32_t> prompt, const RequestParams& params, Engine::OnText on_text,
                         Engine::OnDone on_done, EngineMetrics& metrics);
  // The queued request `id`, taken out and counted cancelled; null when it is not queued.
  std::shared_ptr<QueuedRequest> take(Engine::RequestId id, EngineMetrics& metrics);
  // Every queued request, taken out and counted cancelled (a shutdown).
  std::deque<std::shared_ptr<QueuedRequest>> take_all(EngineMetrics& metrics);

  bool empty() const { return queue_.empty(); }
  size_t size() const { return queue_.size(); }
  const std::shared_ptr<QueuedRequest>& front() const { return queue_.front(); }
  // The oldest request, taken out to run (metrics.queued follows).
  std::shared_ptr<QueuedRequest> pop(EngineMetrics& metrics);

 private:
  std::deque<std::shared_ptr<QueuedRequest>> queue_;
  Engine::RequestId next_id_ = 1;
};

// Tells the request's caller it ended cancelled before producing anything.
void tell_cancelled(const QueuedRequest& r);

}  // namespace lumen::serve
