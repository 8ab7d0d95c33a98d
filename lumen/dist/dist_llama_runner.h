// DistLlamaRunner — a Llama-family model run by several ranks under one
// parallel plan: tensor parallel (every rank holds a slice of every layer) or
// pipeline parallel (every rank holds a stage of layers). The same prefill
// and decode programs as LlamaRunner (one KV cache, the position a dynamic
// dim), each a DistProgram; every rank gets the whole logits and samples the
// same token (seeded samplers agree), so every rank returns the same text.
//
// Pipeline prefill runs the prompt in chunks (micro-batches along the
// sequence): stage 0 starts chunk c + 1 while stage 1 runs chunk c.
//
// Collective: every rank constructs it and calls the same methods in order.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lumen/dist/dist_program.h"
#include "lumen/models/llama_runner.h"
#include "lumen/models/llama_step.h"

namespace lumen::dist {

enum class LlamaParallel { Tensor, Pipeline };
const char* llama_parallel_name(LlamaParallel p);        // "tp", "pp"
LlamaParallel llama_parallel_named(const std::string& name);  // "tp", "pp"

struct DistLlamaOptions {
  models::LlamaRunnerOptions runner;  // capacity, compile options, unused-weight check
  LlamaParallel parallel = LlamaParallel::Tensor;
  int64_t prefill_chunk = 0;          // pipeline: tokens per prefill micro-batch (0: 32)
  Communicator* comm = nullptr;       // default: world()
};

class DistLlamaRunner {
 public:
  DistLlamaRunner(const models::LlamaConfig& config, std::shared_ptr<io::WeightStore> weights,
                  const DistLlamaOptions& options = {});

  // Feeds `tokens` at the current position; the last position's logits.
  std::vector<float> forward(const std::vector<int32_t>& tokens);
  // Feeds `tokens`; logits [1, seq, vocab] for all of them.
  Array forward_all(const std::vector<int32_t>& tokens);
  // A fresh sequence: prefill `prompt`, then up to `max_new` tokens (stops at eos, a full cache or on_token false).
  std::vector<int32_t> generate(const std::vector<int32_t>& prompt, int64_t max_new, models::Sampler& sampler,
                                const std::function<bool(int32_t)>& on_token = {}, models::GenerationStats* stats = nullptr);
  void reset();

  int64_t position() const { return past_; }
  int64_t capacity() const { return capacity_; }
  const models::LlamaConfig& config() const { return config_; }
  const ParallelSpec& spec() const { return spec_; }
  DistProgram& decode_program() { return *decode_; }
  DistProgram& prefill_program() { return *prefill_; }
  double compile_seconds() const { return compile_seconds_; }
  std::string report() const;

 private:
  std::unique_ptr<DistProgram> build(std::optional<int64_t> seq, bool last_only);
  Array run(DistProgram& p, const std::vector<int32_t>& tokens, bool padded, bool fetch);
  Array prefill(const std::vector<int32_t>& tokens);

  static constexpr int64_t kSeqBlock = models::kLlamaSeqBlock;  // llama_step.h

  models::LlamaConfig config_;
  std::shared_ptr<io::WeightStore> weights_;
  DistLlamaOptions options_;
  ParallelSpec spec_;
  int64_t capacity_ = 0;
  int64_t past_ = 0;
  double compile_seconds_ = 0;
  std::unique_ptr<DistProgram> decode_, prefill_, all_;
};

}  // namespace lumen::dist
