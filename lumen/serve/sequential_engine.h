// SequentialEngine — the first Engine: one LlamaRunner, one sequence at a
// time. A worker thread takes requests from a FIFO queue (they join it while
// another runs), prefills each as a fresh sequence and decodes it token by
// token; cancellation takes effect between tokens.
//
// It is correct and simple, not fast under load: a continuous-batching
// engine (README.md) is the planned replacement behind the same interface.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "lumen/io/tokenizer/tokenizer.h"
#include "lumen/models/llama_runner.h"
#include "lumen/serve/engine.h"
#include "lumen/serve/request_queue.h"

namespace lumen::serve {

class SequentialEngine : public Engine {
 public:
  // The runner and tokenizer must outlive the engine; only the worker uses the runner.
  SequentialEngine(models::LlamaRunner& runner, const io::Tokenizer& tokenizer);
  ~SequentialEngine() override;

  RequestId submit(std::vector<int32_t> prompt, const RequestParams& params, OnText on_text, OnDone on_done) override;
  void cancel(RequestId id) override;
  void shutdown() override;
  EngineMetrics metrics() const override;
  int64_t context_length() const override;

 private:
  using Request = QueuedRequest;
  void work();
  Outcome run(Request& r);
  void finished(const Outcome& o, double seconds);

  models::LlamaRunner& runner_;
  const io::Tokenizer& tokenizer_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  RequestQueue queue_;
  std::shared_ptr<Request> running_;
  bool stopping_ = false;
  EngineMetrics metrics_;
  std::atomic<int64_t> positions_in_use_{0};  // the running sequence's length (set by the worker)
  std::thread worker_;
};

}  // namespace lumen::serve
