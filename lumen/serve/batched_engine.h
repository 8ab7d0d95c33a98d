// BatchedEngine — the Engine `lumen serve` runs by default: continuous
// batching over a paged KV cache (PagedLlama, paged_kv_cache.h).
//
// A worker thread loops over steps. Between steps, finished and cancelled
// sequences leave (their blocks return to the pool) and queued requests join
// while a slot (max_batch) and blocks for their prompt are free, in arrival
// order. Each step runs at most `prefill_tokens` prompt tokens (a long
// prompt is prefilled in chunks over several steps, so it never stalls the
// sequences already decoding), then one decode step over every sequence
// that has a token to feed: one program run for all of them, each at its own
// position, sampled with its own parameters. When a sequence needs a block
// and none is free, the youngest other sequence is preempted: its blocks are
// freed and it is later prefilled again from its tokens (recomputation),
// continuing where it was, so a full pool delays requests but never fails them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "lumen/io/tokenizer/tokenizer.h"
#include "lumen/serve/engine.h"
#include "lumen/serve/request_queue.h"
#include "lumen/serve/paged_llama.h"

namespace lumen::serve {

struct BatchedEngineOptions {
  int64_t max_batch = 16;        // sequences running at once (decoded in one step) at most
  int64_t prefill_tokens = 256;  // prompt tokens prefilled per step at most
};

class BatchedEngine : public Engine {
 public:
  // The model and tokenizer must outlive the engine; only the worker uses the model.
  BatchedEngine(PagedLlama& model, const io::Tokenizer& tokenizer, const BatchedEngineOptions& options = {});
  ~BatchedEngine() override;

  RequestId submit(std::vector<int32_t> prompt, const RequestParams& params, OnText on_text, OnDone on_done) override;
  void cancel(RequestId id) override;
  void shutdown() override;
  EngineMetrics metrics() const override;
  int64_t context_length() const override { return model_.context(); }

 private:
  using Request = QueuedRequest;
  struct Sequence;
  using SequencePtr = std::unique_ptr<Sequence>;

  void work();
  void admit();  // under mutex_
  void step();
  void retire_cancelled();
  void run_prefills();
  void run_decode();
  // Frees blocks for `needy` by preempting the youngest other sequence; false when there is none.
  bool preempt_for(const Sequence* needy);
  void prefilled(Sequence& s, const std::vector<float>& logits);
  void accept(Sequence& s, int32_t token);
  void finish(Sequence& s, FinishReason reason, const std::string& error = "");
  void sweep();    // drops finished sequences, moves preempted ones aside, publishes
  void publish();  // under mutex_: running, queued and the cache's state into metrics_

  PagedLlama& model_;
  const io::Tokenizer& tokenizer_;
  BatchedEngineOptions options_;

  mutable std::mutex mutex_;  // guards everything below up to the worker-only part
  std::condition_variable wake_;
  RequestQueue queue_;
  std::map<RequestId, std::shared_ptr<Request>> admitted_;  // running or preempted, by id (for cancel)
  bool stopping_ = false;
  EngineMetrics metrics_;

  // The worker's own (the scheduler state).
  std::vector<SequencePtr> running_;     // in admission order: the last is the youngest
  std::deque<SequencePtr> preempted_;    // waiting for blocks again; admitted before new requests
  std::thread worker_;
};

}  // namespace lumen::serve
