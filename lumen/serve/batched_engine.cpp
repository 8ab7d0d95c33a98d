#include "lumen/serve/batched_engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "lumen/core/error.h"
#include "lumen/core/stopwatch.h"
#include "lumen/serve/text_stream.h"

namespace lumen::serve {

// A request in the scheduler: its blocks, what is cached, how it samples.
struct BatchedEngine::Sequence {
  Sequence(std::shared_ptr<Request> r, const io::Tokenizer& tokenizer)
      : request(std::move(r)), feed(request->prompt), sampler(request->params.sampling), text(tokenizer, request->params.stop) {
    outcome.prompt_tokens = static_cast<int64_t>(request->prompt.size());
  }
  std::shared_ptr<Request> request;
  BlockTable blocks;
  std::vector<int32_t> feed;     // tokens to prefill: the prompt, or after a preemption every token that was cached
  size_t fed = 0;                // how many of `feed` are in the cache
  int64_t cached = 0;            // positions in the cache
  int32_t next = -1;             // the sampled token to decode next; -1 while prefilling
  int32_t resume = -1;           // after a preemption: the token to continue with once `feed` is cached again
  std::vector<int32_t> generated;
  models::Sampler sampler;
  TextStream text;
  Outcome outcome;
  bool done = false;
  bool preempted = false;  // its blocks were taken; sweep() moves it to preempted_

  bool prefilling() const { return fed < feed.size(); }
};

BatchedEngine::BatchedEngine(PagedLlama& model, const io::Tokenizer& tokenizer, const BatchedEngineOptions& options)
    : model_(model), tokenizer_(tokenizer), options_(options) {
  if (options.max_batch < 1 || options.max_batch > 4096) fail("batched engine: max_batch is ", options.max_batch, "; it must be 1..4096");
  if (options.prefill_tokens < 1) fail("batched engine: prefill_tokens is ", options.prefill_tokens, "; it must be at least 1");
  const PagedKvCache& c = model_.cache();
  metrics_.kv_blocks_total = c.blocks_total();
  metrics_.kv_positions_total = c.blocks_total() * c.block_size();
  worker_ = std::thread([this] { work(); });
}

BatchedEngine::~BatchedEngine() { shutdown(); }

Engine::RequestId BatchedEngine::submit(std::vector<int32_t> prompt, const RequestParams& params, OnText on_text, OnDone on_done) {
  check_request(prompt, params, model_.context(), model_.config().vocab);
  const PagedKvCache& c = model_.cache();
  if (c.blocks_for(static_cast<int64_t>(prompt.size()) + 1) > c.blocks_total()) {
    fail("the prompt is ", prompt.size(), " tokens; the KV cache holds ", c.blocks_total() * c.block_size(),
         " positions for all sequences together; shorten the prompt or give the server more KV blocks");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) fail("the server is shutting down");
  RequestId id = queue_.push(std::move(prompt), params, std::move(on_text), std::move(on_done), metrics_);
  wake_.notify_one();
  return id;
}

void BatchedEngine::cancel(RequestId id) {
  std::shared_ptr<Request> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = admitted_.find(id);
    if (it != admitted_.end()) {
      it->second->cancelled = true;  // the worker retires it before the next step
      wake_.notify_one();
      return;
    }
    dropped = queue_.take(id, metrics_);
  }
  if (dropped) tell_cancelled(*dropped);
}

void BatchedEngine::shutdown() {
  std::deque<std::shared_ptr<Request>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && !worker_.joinable()) return;
    stopping_ = true;
    for (auto& [id, r] : admitted_) r->cancelled = true;
    dropped = queue_.take_all(metrics_);
    wake_.notify_all();
  }
  for (const auto& r : dropped) tell_cancelled(*r);
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
}

EngineMetrics BatchedEngine::metrics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return metrics_;
}

void BatchedEngine::work() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !running_.empty() || !preempted_.empty(); });
      if (stopping_) break;
      admit();
    }
    auto start = std::chrono::steady_clock::now();
    step();
    double seconds = seconds_since(start);
    sweep();
    std::lock_guard<std::mutex> lock(mutex_);
    metrics_.busy_seconds += seconds;
  }
  // Shutting down: every admitted request ends as cancelled.
  for (SequencePtr& s : running_) finish(*s, FinishReason::Cancelled);
  for (SequencePtr& s : preempted_) finish(*s, FinishReason::Cancelled);
  preempted_.clear();
  sweep();
}

// Preempted sequences first, then the queue in arrival order, while a slot
// and blocks for the whole prompt are free (no request overtakes another).
void BatchedEngine::admit() {
  PagedKvCache& cache = model_.cache();
  while (static_cast<int64_t>(running_.size()) < options_.max_batch) {
    SequencePtr s;
    if (!preempted_.empty()) {
      if (!cache.grow(preempted_.front()->blocks, static_cast<int64_t>(preempted_.front()->feed.size()))) break;
      s = std::move(preempted_.front());
      preempted_.pop_front();
    } else if (!queue_.empty()) {
      auto seq = std::make_unique<Sequence>(queue_.front(), tokenizer_);
      if (!cache.grow(seq->blocks, static_cast<int64_t>(seq->feed.size()))) break;
      admitted_[seq->request->id] = seq->request;
      queue_.pop(metrics_);  // metrics_.queued is set below, with the preempted
      s = std::move(seq);
    } else {
      break;
    }
    running_.push_back(std::move(s));
  }
  metrics_.queued = static_cast<int64_t>(queue_.size() + preempted_.size());
  metrics_.running = static_cast<int64_t>(running_.size());
}

void BatchedEngine::step() {
  retire_cancelled();
  run_prefills();
  run_decode();
}

void BatchedEngine::retire_cancelled() {
  for (SequencePtr& s : running_) {
    if (!s->done && s->request->cancelled) finish(*s, FinishReason::Cancelled);
  }
  for (auto it = preempted_.begin(); it != preempted_.end();) {
    if ((*it)->request->cancelled) {
      finish(**it, FinishReason::Cancelled);
      it = preempted_.erase(it);
    } else {
      ++it;
    }
  }
}

// Oldest first, at most prefill_tokens prompt tokens in all this step.
void BatchedEngine::run_prefills() {
  int64_t budget = options_.prefill_tokens;
  for (SequencePtr& sp : running_) {
    Sequence& s = *sp;
    if (s.done || !s.prefilling()) continue;
    if (budget <= 0) break;
    size_t count = std::min<size_t>(s.feed.size() - s.fed, static_cast<size_t>(budget));
    std::vector<int32_t> chunk(s.feed.begin() + static_cast<long>(s.fed), s.feed.begin() + static_cast<long>(s.fed + count));
    std::vector<float> logits;
    try {
      logits = model_.prefill(chunk, s.cached, s.blocks);
    } catch (const std::exception& e) {  // fails this request only; the engine serves the others
      finish(s, FinishReason::Error, e.what());
      continue;
    }
    s.fed += count;
    s.cached += static_cast<int64_t>(count);
    budget -= static_cast<int64_t>(count);
    if (!s.prefilling()) prefilled(s, logits);
  }
}

// The whole feed is cached: sample the first token, or continue a preempted sequence.
void BatchedEngine::prefilled(Sequence& s, const std::vector<float>& logits) {
  if (s.resume >= 0) {
    s.next = s.resume;
    s.resume = -1;
    return;
  }
  accept(s, s.sampler(logits));
}

void BatchedEngine::run_decode() {
  PagedKvCache& cache = model_.cache();
  std::vector<Sequence*> rows;
  for (SequencePtr& sp : running_) {
    Sequence& s = *sp;
    if (s.done || s.next < 0) continue;
    bool room = cache.grow(s.blocks, s.cached + 1);
    while (!room && preempt_for(&s)) room = cache.grow(s.blocks, s.cached + 1);
    if (!room) {
      finish(s, FinishReason::Error, "the KV cache has no free block for this sequence");
      continue;
    }
    rows.push_back(&s);
  }
  // A preemption may have taken a sequence already listed.
  rows.erase(std::remove_if(rows.begin(), rows.end(), [](const Sequence* s) { return s->done || s->preempted; }), rows.end());
  if (rows.empty()) return;
  std::vector<PagedLlama::Row> batch;
  for (Sequence* s : rows) batch.push_back({s->next, s->cached, &s->blocks});
  const Array* logits = nullptr;
  try {
    logits = &model_.decode(batch);
  } catch (const std::exception& e) {
    for (Sequence* s : rows) finish(*s, FinishReason::Error, e.what());
    return;
  }
  int64_t vocab = model_.config().vocab;
  const float* data = static_cast<const float*>(logits->data());
  for (size_t r = 0; r < rows.size(); ++r) {
    Sequence& s = *rows[r];
    s.cached += 1;
    std::vector<float> row(data + static_cast<int64_t>(r) * vocab, data + static_cast<int64_t>(r + 1) * vocab);
    accept(s, s.sampler(row));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  metrics_.decode_steps += 1;
  metrics_.decode_rows += static_cast<int64_t>(rows.size());
}

bool BatchedEngine::preempt_for(const Sequence* needy) {
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    Sequence& s = **it;
    if (&s == needy || s.done || s.preempted || s.blocks.empty()) continue;
    model_.cache().release(s.blocks);
    s.preempted = true;
    // Everything it had cached is prefilled again: the prompt and the tokens fed since.
    s.feed = s.request->prompt;
    if (s.next >= 0) {
      s.feed.insert(s.feed.end(), s.generated.begin(), s.generated.end() - 1);
      s.resume = s.next;
    }
    s.fed = 0;
    s.cached = 0;
    s.next = -1;
    std::lock_guard<std::mutex> lock(mutex_);
    ++metrics_.preemptions;
    return true;
  }
  return false;
}

// A sampled token, as SequentialEngine treats it: a stop token ends the
// request unseen; otherwise its text goes out, then a stop string, an eos
// token, max_tokens or a full context ends it.
void BatchedEngine::accept(Sequence& s, int32_t token) {
  Request& r = *s.request;
  if (r.cancelled) return finish(s, FinishReason::Cancelled);
  ++s.outcome.completion_tokens;
  if (r.params.stop_tokens.count(token)) return finish(s, FinishReason::Stop);
  std::string piece = s.text.push(token);
  if (!piece.empty() && r.on_text) r.on_text(token, piece);
  if (s.text.stopped() || model_.config().is_eos(token)) return finish(s, FinishReason::Stop);
  if (s.outcome.completion_tokens >= r.params.max_tokens || s.cached >= model_.context()) return finish(s, FinishReason::Length);
  s.generated.push_back(token);
  s.next = token;
}

void BatchedEngine::finish(Sequence& s, FinishReason reason, const std::string& error) {
  if (s.done) return;
  s.done = true;
  s.next = -1;
  model_.cache().release(s.blocks);
  Request& r = *s.request;
  if (reason == FinishReason::Stop || reason == FinishReason::Length) {
    std::string rest = s.text.finish();
    if (!rest.empty() && r.on_text) r.on_text(-1, rest);
  }
  s.outcome.reason = reason;
  s.outcome.error = error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    admitted_.erase(r.id);
    publish();  // a client told it finished sees its blocks returned
    metrics_.prompt_tokens += s.outcome.prompt_tokens;
    metrics_.generated_tokens += s.outcome.completion_tokens;
    if (reason == FinishReason::Cancelled) ++metrics_.requests_cancelled;
    else if (reason == FinishReason::Error) ++metrics_.requests_failed;
    else ++metrics_.requests_finished;
  }
  if (r.on_done) r.on_done(s.outcome);
}

void BatchedEngine::sweep() {
  std::vector<SequencePtr> kept;
  for (SequencePtr& s : running_) {
    if (s->done) continue;
    if (s->preempted) {
      s->preempted = false;
      preempted_.push_back(std::move(s));
    } else {
      kept.push_back(std::move(s));
    }
  }
  running_ = std::move(kept);
  std::lock_guard<std::mutex> lock(mutex_);
  publish();
}

void BatchedEngine::publish() {
  int64_t running = 0, waiting = 0, positions = 0;
  for (const SequencePtr& s : running_) {
    if (s->done) continue;
    (s->preempted ? waiting : running) += 1;
    positions += s->cached;
  }
  for (const SequencePtr& s : preempted_) waiting += s->done ? 0 : 1;
  metrics_.running = running;
  metrics_.queued = static_cast<int64_t>(queue_.size()) + waiting;
  metrics_.kv_blocks_in_use = model_.cache().blocks_in_use();
  metrics_.kv_positions_in_use = positions;
}

}  // namespace lumen::serve
