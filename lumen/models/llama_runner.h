// LlamaRunner — a Llama-family model compiled and ready to generate.
//
// Two programs share one KV cache (persistent state): prefill (any number of
// tokens, logits of the last position) and decode (one token). The position
// is a dynamic dim, so neither recompiles as the sequence grows. A third
// program with logits for every position is compiled on first use (for
// checking against a reference).
//
// This sits above compile(): it is an application of the public API, like
// the command line, not part of the compiler.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lumen/compile.h"
#include "lumen/io/weight_store.h"
#include "lumen/models/llama.h"
#include "lumen/models/llama_step.h"
#include "lumen/models/sampling.h"

namespace lumen::models {

struct LlamaRunnerOptions {
  int64_t capacity = 0;    // KV-cache positions; 0: min(max_position_embeddings, 2048)
  CompileOptions compile;  // backend, search budget (shared by the programs), tuning cache
  // Every weight the model does not read is an error naming it (see
  // unused_weights.h); off only where the model is cut on purpose (fewer layers).
  bool refuse_unused_weights = true;
  // The KV cache's dtype (f32, f16 or bf16). Unset: f16 when the weights are
  // block-quantized (GGUF Q8_0, Q4_K, ...: llama.cpp's default cache), else f32.
  // (DistLlamaRunner keeps an f32 cache.)
  std::optional<DType> kv_cache;
};

// A KV-cache dtype by name: "auto" (nothing: the default above), "f32", "f16" or "bf16".
std::optional<DType> kv_cache_named(const std::string& name);

// Why generation stopped.
enum class StopReason {
  Length,       // max_new tokens were generated
  Eos,          // an end-of-sequence token of the config was generated (it is included)
  ContextFull,  // the KV cache is full: fewer tokens than asked
  Callback,     // on_token returned false
};
const char* stop_reason_name(StopReason r);  // "length", "eos", "context_full", "callback"

struct GenerationStats {
  int64_t prompt_tokens = 0, generated_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
  StopReason stop_reason = StopReason::Length;
  double prefill_tokens_per_second() const { return prefill_seconds > 0 ? static_cast<double>(prompt_tokens) / prefill_seconds : 0; }
  double decode_tokens_per_second() const {
    return decode_seconds > 0 ? static_cast<double>(generated_tokens > 0 ? generated_tokens - 1 : 0) / decode_seconds : 0;
  }
};

// Refuses a tied-embedding checkpoint whose stored lm_head differs from the embedding.
void check_tied_head(const LlamaConfig& config, const io::WeightStore& weights);
// After a model graph declared every parameter: the checkpoint tensors it did
// not read (known-unneeded ones included); with `refuse`, an error naming any
// other unread one.
std::vector<std::string> check_unused_llama_weights(const LlamaConfig& config, const io::WeightStore& weights, bool refuse);

class LlamaRunner {
 public:
  LlamaRunner(const LlamaConfig& config, std::shared_ptr<io::WeightStore> weights, const LlamaRunnerOptions& options = {});

  // Feeds `tokens` at the current position; returns the last position's logits.
  std::vector<float> forward(const std::vector<int32_t>& tokens);
  // Feeds `tokens` at the current position; returns logits [seq, vocab] for all of them.
  Array forward_all(const std::vector<int32_t>& tokens);
  // Prefill with `prompt`, then sample up to `max_new` tokens, stopping at
  // any of the config's eos tokens, when `on_token` returns false, or when
  // the KV cache is full (stats->stop_reason says which). Returns the new
  // tokens. A fresh sequence unless `continue_sequence`: then the previous
  // generate's last token and `prompt` extend the cached sequence.
  std::vector<int32_t> generate(const std::vector<int32_t>& prompt, int64_t max_new, Sampler& sampler,
                                const std::function<bool(int32_t)>& on_token = {}, GenerationStats* stats = nullptr,
                                bool continue_sequence = false);

  void reset();  // empties the KV cache
  // Checkpoint tensors the model does not read (known-unneeded ones such as
  // rotary inv_freq buffers included); construction refuses any other.
  const std::vector<std::string>& unused_weights() const { return unused_weights_; }
  int64_t position() const { return past_; }
  int64_t capacity() const { return capacity_; }
  DType kv_cache_dtype() const { return kv_cache_; }
  int64_t kv_cache_bytes() const;  // the key and value caches' state buffers, as allocated
  const LlamaConfig& config() const { return config_; }
  double compile_seconds() const { return compile_seconds_; }
  int64_t weight_bytes() const { return weights_->stored_bytes(); }  // as held in memory (quantized stays quantized)
  std::string report() const;  // what compiling each program did
  Program& decode_program() { return *decode_; }
  Program& prefill_program() { return *prefill_; }

 private:
  // seq: a static step length (decode: 1), or nothing: a padded multiple of
  // kSeqBlock tokens with a dynamic count of blocks. from_start: for an
  // empty cache (past = 0 built in, not a dim).
  std::unique_ptr<Program> build(std::optional<int64_t> seq, bool last_only, double budget_s, bool from_start = false);
  // The program for a step of several tokens at `past`: from the start of an
  // empty cache, one with past = 0 built in (compiled on first use: the
  // causal scores' key axis is then whole blocks, which register tiles
  // need); else the general one.
  Program& prefill_at(int64_t past);
  Array run(Program& p, const std::vector<int32_t>& tokens, bool padded);

  static constexpr int64_t kSeqBlock = kLlamaSeqBlock;  // llama_step.h

  LlamaConfig config_;
  std::shared_ptr<io::WeightStore> weights_;
  LlamaRunnerOptions options_;
  int64_t capacity_ = 0;
  DType kv_cache_ = DType::F32;
  int64_t past_ = 0;
  // The last token generate() sampled: not yet in the cache (a continued
  // generate feeds it first); -1: none.
  int32_t pending_ = -1;
  std::vector<std::string> unused_weights_;
  double compile_seconds_ = 0;
  std::unique_ptr<Program> prefill_, decode_, all_, prefill_start_;
};

}  // namespace lumen::models
