#include "lumen/serve/sequential_engine.h"

#include <atomic>
#include <chrono>

#include "lumen/core/error.h"
#include "lumen/serve/text_stream.h"

namespace lumen::serve {

SequentialEngine::SequentialEngine(models::LlamaRunner& runner, const io::Tokenizer& tokenizer)
    : runner_(runner), tokenizer_(tokenizer) {
  metrics_.kv_positions_total = runner_.capacity();
  worker_ = std::thread([this] { work(); });
}

SequentialEngine::~SequentialEngine() { shutdown(); }

int64_t SequentialEngine::context_length() const { return runner_.capacity(); }

Engine::RequestId SequentialEngine::submit(std::vector<int32_t> prompt, const RequestParams& params, OnText on_text,
                                           OnDone on_done) {
  check_request(prompt, params, runner_.capacity(), runner_.config().vocab);
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) fail("the server is shutting down");
  RequestId id = queue_.push(std::move(prompt), params, std::move(on_text), std::move(on_done), metrics_);
  wake_.notify_one();
  return id;
}

void SequentialEngine::cancel(RequestId id) {
  std::shared_ptr<Request> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (running_ && running_->id == id) {
      running_->cancelled = true;  // the worker sees it before the next token
      return;
    }
    dropped = queue_.take(id, metrics_);
  }
  if (dropped) tell_cancelled(*dropped);
}

void SequentialEngine::shutdown() {
  std::deque<std::shared_ptr<Request>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && !worker_.joinable()) return;
    stopping_ = true;
    if (running_) running_->cancelled = true;
    dropped = queue_.take_all(metrics_);
    wake_.notify_all();
  }
  for (const auto& r : dropped) tell_cancelled(*r);
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
}

EngineMetrics SequentialEngine::metrics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  EngineMetrics m = metrics_;
  m.kv_positions_in_use = running_ ? positions_in_use_.load() : 0;
  return m;
}

void SequentialEngine::work() {
  while (true) {
    std::shared_ptr<Request> r;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      r = queue_.pop(metrics_);
      running_ = r;
      metrics_.running = 1;
    }
    auto start = std::chrono::steady_clock::now();
    Outcome o;
    try {
      o = run(*r);
    } catch (const std::exception& e) {  // a failed run fails this request only; the worker serves the next
      o = {FinishReason::Error, static_cast<int64_t>(r->prompt.size()), 0, e.what()};
    }
    finished(o, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (r->on_done) r->on_done(o);
  }
}

void SequentialEngine::finished(const Outcome& o, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  running_.reset();
  metrics_.running = 0;
  metrics_.busy_seconds += seconds;
  metrics_.prompt_tokens += o.prompt_tokens;
  metrics_.generated_tokens += o.completion_tokens;
  int64_t decoded = o.completion_tokens > 1 ? o.completion_tokens - 1 : 0;  // the first token comes from the prefill
  metrics_.decode_steps += decoded;
  metrics_.decode_rows += decoded;
  if (o.reason == FinishReason::Cancelled) ++metrics_.requests_cancelled;
  else if (o.reason == FinishReason::Error) ++metrics_.requests_failed;
  else ++metrics_.requests_finished;
}

Outcome SequentialEngine::run(Request& r) {
  TextStream text(tokenizer_, r.params.stop);
  models::Sampler sampler(r.params.sampling);
  Outcome o;
  o.prompt_tokens = static_cast<int64_t>(r.prompt.size());
  bool hit_stop_token = false;
  models::GenerationStats stats;
  runner_.reset();
  runner_.generate(r.prompt, r.params.max_tokens, sampler, [&](int32_t t) {
    if (r.cancelled) return false;
    ++o.completion_tokens;
    positions_in_use_ = o.prompt_tokens + o.completion_tokens;
    if (r.params.stop_tokens.count(t)) {
      hit_stop_token = true;
      return false;
    }
    std::string piece = text.push(t);
    if (!piece.empty() && r.on_text) r.on_text(t, piece);
    return !text.stopped();
  }, &stats);
  if (r.cancelled) {
    o.reason = FinishReason::Cancelled;
    return o;
  }
  std::string rest = text.finish();
  if (!rest.empty() && r.on_text) r.on_text(-1, rest);
  bool stopped = hit_stop_token || text.stopped() || stats.stop_reason == models::StopReason::Eos;
  o.reason = stopped ? FinishReason::Stop : FinishReason::Length;
  return o;
}

}  // namespace lumen::serve
