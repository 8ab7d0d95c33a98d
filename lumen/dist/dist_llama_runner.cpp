#include "lumen/dist/dist_llama_runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/core/stopwatch.h"
#include "lumen/dist/model_plans.h"
#include "lumen/models/unused_weights.h"

namespace lumen::dist {

const char* llama_parallel_name(LlamaParallel p) { return p == LlamaParallel::Tensor ? "tp" : "pp"; }

LlamaParallel llama_parallel_named(const std::string& name) {
  if (name == "tp" || name == "tensor") return LlamaParallel::Tensor;
  if (name == "pp" || name == "pipeline") return LlamaParallel::Pipeline;
  fail("dist: unknown parallel plan '", name, "' for llama (tp: tensor parallel, pp: pipeline, auto: searched)");
}

DistLlamaRunner::DistLlamaRunner(const models::LlamaConfig& config, std::shared_ptr<io::WeightStore> weights,
                                 const DistLlamaOptions& options)
    : config_(config), weights_(std::move(weights)), options_(options) {
  config_.validate();
  if (!weights_) fail("llama: no weights");
  Communicator& comm = options.comm ? *options.comm : world();
  options_.comm = &comm;
  int ranks = comm.size();
  spec_ = options.parallel == LlamaParallel::Tensor ? llama_tensor_parallel(config_, ranks) : llama_pipeline(config_, ranks);
  const models::LlamaRunnerOptions& r = options.runner;
  capacity_ = r.capacity > 0 ? r.capacity : std::min<int64_t>(config_.max_position, 2048);
  decode_ = build(1, true);
  prefill_ = build(std::nullopt, true);
  prefill_->share_state(*decode_);
}

std::unique_ptr<DistProgram> DistLlamaRunner::build(std::optional<int64_t> seq, bool last_only) {
  auto start = std::chrono::steady_clock::now();
  Graph g;
  Tensor logits;
  {
    nn::ScopedParameterSource source(*weights_);
    models::Llama model(g, config_);
    Expr s = seq ? Expr(*seq) : Expr(kSeqBlock) * g.dim("seq_blocks");
    Tensor tokens = g.input("tokens", {Expr(1), s}, DType::I32);
    std::optional<Expr> at;
    if (last_only) at = seq ? Expr(*seq - 1) : simplify(g.dim("real") - 1);
    logits = model.step(tokens, g.dim("past"), capacity_ + kSeqBlock, at);
  }
  if (!decode_ && options_.runner.refuse_unused_weights) {
    std::vector<std::string> known{".rotary_emb.inv_freq"};
    if (config_.tie_embeddings) known.push_back("lm_head.weight");
    models::refuse_unused_weights(*weights_, known, "llama");
  }
  DistOptions o;
  o.compile = options_.runner.compile;
  o.comm = options_.comm;
  if (!o.compile.tune_dims.count("past")) o.compile.tune_dims["past"] = seq ? 128 : 0;
  if (!o.compile.tune_dims.count("seq_blocks")) o.compile.tune_dims["seq_blocks"] = 128 / kSeqBlock;
  if (!o.compile.tune_dims.count("real")) o.compile.tune_dims["real"] = 128;
  auto p = std::make_unique<DistProgram>(g, std::vector<Tensor>{logits}, spec_, o);
  for (const auto& [name, array] : weights_->inputs()) {
    if (g.find_input(name) >= 0) p->set(name, array);
  }
  compile_seconds_ += seconds_since(start);
  return p;
}

Array DistLlamaRunner::run(DistProgram& p, const std::vector<int32_t>& tokens, bool padded, bool fetch) {
  models::feed_step(p, tokens, padded, past_, capacity_, config_.vocab);
  p.run();
  past_ += static_cast<int64_t>(tokens.size());
  return fetch ? p.get("out0") : Array();
}

// Pipeline plans run the prompt in chunks, fetching only the last chunk's
// logits, so stage 0 computes chunk c + 1 while stage 1 computes chunk c.
Array DistLlamaRunner::prefill(const std::vector<int32_t>& tokens) {
  int64_t chunk = options_.prefill_chunk > 0 ? options_.prefill_chunk : 32;
  if (spec_.stages == 1 || static_cast<int64_t>(tokens.size()) <= chunk) return run(*prefill_, tokens, true, true);
  for (size_t first = 0;; first += static_cast<size_t>(chunk)) {
    size_t end = std::min(tokens.size(), first + static_cast<size_t>(chunk));
    std::vector<int32_t> part(tokens.begin() + static_cast<std::ptrdiff_t>(first), tokens.begin() + static_cast<std::ptrdiff_t>(end));
    bool last = end == tokens.size();
    Array logits = run(*prefill_, part, true, last);
    if (last) return logits;
  }
}

std::vector<float> DistLlamaRunner::forward(const std::vector<int32_t>& tokens) {
  bool one = tokens.size() == 1;
  return (one ? run(*decode_, tokens, false, true) : prefill(tokens)).to_floats();
}

Array DistLlamaRunner::forward_all(const std::vector<int32_t>& tokens) {
  if (!all_) {
    all_ = build(std::nullopt, false);
    all_->share_state(*decode_);
  }
  Array logits = run(*all_, tokens, true, true);
  int64_t n = static_cast<int64_t>(tokens.size()), vocab = config_.vocab;
  Array out(DType::F32, {1, n, vocab});
  std::memcpy(out.data(), logits.data(), static_cast<size_t>(n * vocab) * sizeof(float));
  return out;
}

std::vector<int32_t> DistLlamaRunner::generate(const std::vector<int32_t>& prompt, int64_t max_new, models::Sampler& sampler,
                                               const std::function<bool(int32_t)>& on_token, models::GenerationStats* stats) {
  if (max_new < 1) fail("generate: max_new must be at least 1, got ", max_new);
  if (prompt.empty()) fail("generate: the prompt is empty");
  reset();
  models::GenerationStats st;
  st.prompt_tokens = static_cast<int64_t>(prompt.size());
  auto start = std::chrono::steady_clock::now();
  std::vector<float> logits = forward(prompt);
  st.prefill_seconds = seconds_since(start);
  start = std::chrono::steady_clock::now();
  std::vector<int32_t> out;
  for (int64_t i = 0;; ++i) {
    int32_t next = sampler(logits);
    out.push_back(next);
    ++st.generated_tokens;
    bool go_on = !on_token || on_token(next);
    if (config_.is_eos(next)) {
      st.stop_reason = models::StopReason::Eos;
    } else if (!go_on) {
      st.stop_reason = models::StopReason::Callback;
    } else if (i + 1 == max_new) {
      st.stop_reason = models::StopReason::Length;
    } else if (past_ >= capacity_) {
      st.stop_reason = models::StopReason::ContextFull;
    } else {
      logits = run(*decode_, {next}, false, true).to_floats();
      continue;
    }
    break;
  }
  st.decode_seconds = seconds_since(start);
  if (stats) *stats = st;
  return out;
}

void DistLlamaRunner::reset() {
  past_ = 0;
  decode_->reset_state();
}

std::string DistLlamaRunner::report() const {
  return std::string("plan ") + llama_parallel_name(options_.parallel) + "\ndecode: " + decode_->report() +
         "prefill: " + prefill_->report();
}

}  // namespace lumen::dist
