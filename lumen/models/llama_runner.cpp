#include "lumen/models/llama_runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/core/stopwatch.h"
#include "lumen/models/unused_weights.h"

namespace lumen::models {

// tie_word_embeddings with an lm_head.weight in the file: transformers 4 used
// the embedding, transformers 5 uses the stored head when it differs. Equal,
// it is redundant; different, the checkpoint contradicts its config.
void check_tied_head(const LlamaConfig& c, const io::WeightStore& w) {
  if (!c.tie_embeddings || !w.contains("lm_head.weight") || !w.contains("model.embed_tokens.weight")) return;
  const io::StoredWeight& head = w.weight("lm_head.weight");
  const io::StoredWeight& embed = w.weight("model.embed_tokens.weight");
  bool same = head.format == io::WeightFormat::Plain && embed.format == io::WeightFormat::Plain && head.shape == embed.shape;
  if (same && head.data.dtype() == embed.data.dtype()) {  // bytes: no float copies of a large matrix
    same = std::memcmp(head.data.data(), embed.data.data(), head.data.nbytes()) == 0;
  } else if (same) {
    same = head.data.to_floats() == embed.data.to_floats();
  }
  if (!same) {
    fail("llama: '", w.origin, "': the config ties the LM head to the embedding (tie_word_embeddings) but the file holds an "
         "lm_head.weight that differs from model.embed_tokens.weight; set tie_word_embeddings to false to use it");
  }
}

std::vector<std::string> check_unused_llama_weights(const LlamaConfig& c, const io::WeightStore& w, bool refuse) {
  std::vector<std::string> unused = models::unused_weights(w);
  // Older Hugging Face checkpoints carry the rotary tables as buffers; with
  // tied embeddings a stored lm_head equal to the embedding is redundant
  // (check_tied_head refuses one that differs).
  std::vector<std::string> known{".rotary_emb.inv_freq"};
  if (c.tie_embeddings) known.push_back("lm_head.weight");
  if (refuse) refuse_unused_weights(w, known, "llama");
  return unused;
}

namespace {

bool quantized_weights(const io::WeightStore& w) {
  for (const std::string& name : w.names()) {
    if (w.weight(name).format != io::WeightFormat::Plain) return true;
  }
  return false;
}

}  // namespace

std::optional<DType> kv_cache_named(const std::string& name) {
  if (name == "auto") return std::nullopt;
  if (name == "f32") return DType::F32;
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  fail("llama: KV cache '", name, "': expected auto, f32, f16 or bf16");
}

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::Length: return "length";
    case StopReason::Eos: return "eos";
    case StopReason::ContextFull: return "context_full";
    case StopReason::Callback: return "callback";
  }
  return "?";
}

LlamaRunner::LlamaRunner(const LlamaConfig& config, std::shared_ptr<io::WeightStore> weights, const LlamaRunnerOptions& options)
    : config_(config), weights_(std::move(weights)), options_(options) {
  config_.validate();
  if (!weights_) fail("llama: no weights");
  check_tied_head(config_, *weights_);
  capacity_ = options.capacity > 0 ? options.capacity : std::min<int64_t>(config_.max_position, 2048);
  kv_cache_ = options.kv_cache ? *options.kv_cache : quantized_weights(*weights_) ? DType::F16 : DType::F32;
  if (kv_cache_ != DType::F32 && kv_cache_ != DType::F16 && kv_cache_ != DType::BF16) {
    fail("llama: a KV cache of ", dtype_name(kv_cache_), " is not supported (f32, f16 or bf16)");
  }
  double budget = options.compile.search_budget_s;
  // Decode runs once per generated token: it gets most of the search time.
  decode_ = build(1, true, budget * 0.6);
  prefill_ = build(std::nullopt, true, budget * 0.4);
  prefill_->share_state(*decode_);
}

std::unique_ptr<Program> LlamaRunner::build(std::optional<int64_t> seq, bool last_only, double budget_s, bool from_start) {
  auto start = std::chrono::steady_clock::now();
  Graph g;
  Tensor logits;
  {
    nn::ScopedParameterSource source(*weights_);
    Llama model(g, config_);
    model.cache_dtype = kv_cache_;
    Expr s = seq ? Expr(*seq) : Expr(kSeqBlock) * g.dim("seq_blocks");
    Tensor tokens = g.input("tokens", {Expr(1), s}, DType::I32);
    std::optional<Expr> at;
    if (last_only) at = seq ? Expr(*seq - 1) : simplify(g.dim("real") - 1);
    // The cache has room for one block of padding beyond the capacity.
    std::optional<Expr> real;
    if (!seq) real = g.dim("real");  // the tokens before the padding
    logits = model.step(tokens, from_start ? Expr(0) : g.dim("past"), capacity_ + kSeqBlock, at, real);
  }
  if (!decode_) {  // the first program declares every parameter: check the checkpoint before compiling
    unused_weights_ = check_unused_llama_weights(config_, *weights_, options_.refuse_unused_weights);
  }
  CompileOptions o = options_.compile;
  o.search_budget_s = budget_s;
  if (from_start) o.tune_dims.erase("past");  // 0, built in: not a dim
  else if (!o.tune_dims.count("past")) o.tune_dims["past"] = seq ? 128 : 0;  // decode deep in a sequence; prefill from the start
  if (!o.tune_dims.count("seq_blocks")) o.tune_dims["seq_blocks"] = 128 / kSeqBlock;
  if (!o.tune_dims.count("real")) o.tune_dims["real"] = 128;
  auto p = std::make_unique<Program>(compile(g, {logits}, o));
  for (NodeId id : p->graph().input_ids()) {
    const Node& n = p->graph().node(id);
    auto it = weights_->inputs().find(n.name);
    if (it != weights_->inputs().end()) p->set(n.name, it->second);
  }
  compile_seconds_ += seconds_since(start);
  return p;
}

Array LlamaRunner::run(Program& p, const std::vector<int32_t>& tokens, bool padded) {
  feed_step(p, tokens, padded, past_, capacity_, config_.vocab);
  p.run();
  past_ += static_cast<int64_t>(tokens.size());
  return p.get("out0");
}

Program& LlamaRunner::prefill_at(int64_t past) {
  if (past != 0) return *prefill_;
  if (!prefill_start_) {
    prefill_start_ = build(std::nullopt, true, options_.compile.search_budget_s * 0.4, true);
    prefill_start_->share_state(*decode_);
  }
  return *prefill_start_;
}

std::vector<float> LlamaRunner::forward(const std::vector<int32_t>& tokens) {
  pending_ = -1;  // the caller feeds the sequence by hand from here
  bool one = tokens.size() == 1;
  return run(one ? *decode_ : prefill_at(past_), tokens, !one).to_floats();
}

Array LlamaRunner::forward_all(const std::vector<int32_t>& tokens) {
  pending_ = -1;
  if (!all_) {
    all_ = build(std::nullopt, false, 0);
    all_->share_state(*decode_);
  }
  Array logits = run(*all_, tokens, true);
  int64_t n = static_cast<int64_t>(tokens.size()), vocab = config_.vocab;
  Array out(DType::F32, {1, n, vocab});  // without the padding positions
  std::memcpy(out.data(), logits.data(), static_cast<size_t>(n * vocab) * sizeof(float));
  return out;
}

std::vector<int32_t> LlamaRunner::generate(const std::vector<int32_t>& prompt, int64_t max_new, Sampler& sampler,
                                           const std::function<bool(int32_t)>& on_token, GenerationStats* stats,
                                           bool continue_sequence) {
  if (max_new < 1) fail("generate: max_new must be at least 1, got ", max_new);
  std::vector<int32_t> fed = prompt;
  if (continue_sequence && pending_ >= 0) fed.insert(fed.begin(), pending_);
  if (fed.empty()) fail("generate: the prompt is empty", continue_sequence ? " and there is no sequence to continue" : "");
  if (!continue_sequence) reset();
  GenerationStats st;
  st.prompt_tokens = static_cast<int64_t>(prompt.size());
  std::vector<int32_t> out;
  auto start = std::chrono::steady_clock::now();
  bool one = fed.size() == 1;
  std::vector<float> logits = run(one ? *decode_ : prefill_at(past_), fed, !one).to_floats();
  pending_ = -1;
  st.prefill_seconds = seconds_since(start);
  start = std::chrono::steady_clock::now();
  for (int64_t i = 0;; ++i) {
    int32_t next = sampler(logits);
    out.push_back(next);
    pending_ = next;
    ++st.generated_tokens;
    bool go_on = !on_token || on_token(next);
    if (config_.is_eos(next)) {
      st.stop_reason = StopReason::Eos;
    } else if (!go_on) {
      st.stop_reason = StopReason::Callback;
    } else if (i + 1 == max_new) {
      st.stop_reason = StopReason::Length;
    } else if (past_ >= capacity_) {
      st.stop_reason = StopReason::ContextFull;
    } else {
      logits = run(*decode_, {next}, false).to_floats();
      continue;
    }
    break;
  }
  st.decode_seconds = seconds_since(start);
  if (stats) *stats = st;
  return out;
}

void LlamaRunner::reset() {
  past_ = 0;
  pending_ = -1;
  decode_->reset_state();  // the programs share the buffers
}

int64_t LlamaRunner::kv_cache_bytes() const {
  int64_t total = 0;
  for (int64_t layer = 0; layer < config_.layers; ++layer) {
    for (bool keys : {true, false}) {
      total += static_cast<int64_t>(decode_->state(Llama::cache_name(layer, keys)).nbytes());
    }
  }
  return total;
}

std::string LlamaRunner::report() const {
  std::string r = "KV cache: " + std::string(dtype_name(kv_cache_)) + ", " + std::to_string(capacity_) + " positions\n";
  r += "decode program:\n" + decode_->report() + "\nprefill program:\n" + prefill_->report();
  if (prefill_start_) r += "\nprefill-from-the-start program:\n" + prefill_start_->report();
  return r;
}

}  // namespace lumen::models
