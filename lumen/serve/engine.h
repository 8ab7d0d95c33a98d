// Engine — what the HTTP server asks of a text-generation backend: submit a
// tokenized prompt with its sampling parameters, receive text pieces through
// a callback as tokens are generated, learn how it finished, cancel it.
//
// The interface says nothing about how many sequences run at once: the
// server runs BatchedEngine (many sequences per decode step over a paged KV
// cache) or SequentialEngine (one at a time) alike.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "lumen/models/sampling.h"

namespace lumen::serve {

struct RequestParams {
  models::SamplingOptions sampling;  // temperature 0: greedy
  int64_t max_tokens = 16;           // tokens to generate at most (>= 1)
  std::vector<std::string> stop;     // stop strings: generation ends before the first one (not returned)
  std::set<int32_t> stop_tokens;     // ids that end generation, not returned (a chat format's end-of-turn tokens)
};

// Why a request finished, with OpenAI's names where they exist.
enum class FinishReason {
  Stop,       // an eos / stop token or a stop string
  Length,     // max_tokens generated, or the context is full
  Cancelled,  // cancel(), or the engine shut down
  Error,      // the engine failed running it (Outcome::error says why)
};
const char* finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "error"

struct Outcome {
  FinishReason reason = FinishReason::Stop;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  std::string error;  // when reason is Error
};

// Counters for /metrics (totals since start, and the present queue).
struct EngineMetrics {
  int64_t requests_finished = 0, requests_cancelled = 0, requests_failed = 0;
  int64_t prompt_tokens = 0, generated_tokens = 0;
  double busy_seconds = 0;  // time spent running requests (prefill and decode)
  int64_t queued = 0, running = 0;
  int64_t kv_positions_in_use = 0, kv_positions_total = 0;
  int64_t kv_blocks_in_use = 0, kv_blocks_total = 0;  // a paged cache's blocks (0 and 0 without one)
  int64_t decode_steps = 0, decode_rows = 0;          // decode program runs, and the sequences they advanced
  int64_t preemptions = 0;                            // sequences whose blocks were taken (recomputed later)
};

// The checks every engine's submit() makes: a non-empty prompt shorter than
// `context`, tokens in 0..vocab-1, max_tokens >= 1, temperature >= 0, top_p
// in (0, 1], top_k >= 0. Throws lumen::Error saying which and why.
void check_request(const std::vector<int32_t>& prompt, const RequestParams& params, int64_t context, int64_t vocab);

class Engine {
 public:
  using RequestId = uint64_t;
  // Called on the engine's thread with each new piece of text (held back
  // while it could still be the start of a stop string); the token that
  // produced it is given too (-1 for text released at the end). Must not
  // block for long: the next token waits.
  using OnText = std::function<void(int32_t token, const std::string& text)>;
  // Called exactly once, on the engine's thread, when the request ends for any reason.
  using OnDone = std::function<void(const Outcome&)>;

  virtual ~Engine() = default;
  // Queues a request. Throws lumen::Error (and calls nothing) when it can
  // never run: an empty prompt, a prompt that fills the context, bad params,
  // or an engine that is shutting down.
  virtual RequestId submit(std::vector<int32_t> prompt, const RequestParams& params, OnText on_text, OnDone on_done) = 0;
  // Ends a queued or running request (between tokens); its OnDone says
  // Cancelled. Unknown or finished ids are ignored.
  virtual void cancel(RequestId id) = 0;
  // Cancels everything and stops the worker; submit() refuses afterwards.
  virtual void shutdown() = 0;
  virtual EngineMetrics metrics() const = 0;
  virtual int64_t context_length() const = 0;  // positions one sequence may use (prompt + generated)
};

}  // namespace lumen::serve
