#include "lumen/models/llama_runner.h"

#include <chrono>

#include "lumen/core/error.h"

namespace lumen::models {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

LlamaRunner::LlamaRunner(const LlamaConfig& config, std::shared_ptr<io::WeightStore> weights, const LlamaRunnerOptions& options)
    : config_(config), weights_(std::move(weights)), options_(options) {
  config_.validate();
  if (!weights_) fail("llama: no weights");
  capacity_ = options.capacity > 0 ? options.capacity : std::min<int64_t>(config_.max_position, 2048);
  double budget = options.compile.search_budget_s;
  // Decode runs once per generated token: it gets most of the search time.
  decode_ = build(1, true, budget * 0.6);
  prefill_ = build(std::nullopt, true, budget * 0.4);
  prefill_->share_state(*decode_);
}

std::unique_ptr<Program> LlamaRunner::build(std::optional<int64_t> seq, bool last_only, double budget_s) {
  auto start = std::chrono::steady_clock::now();
  Graph g;
  Tensor logits;
  {
    nn::ScopedParameterSource source(*weights_);
    Llama model(g, config_);
    Expr s = seq ? Expr(*seq) : g.dim("seq");
    Tensor tokens = g.input("tokens", {Expr(1), s}, DType::I32);
    logits = model.step(tokens, g.dim("past"), capacity_, last_only);
  }
  CompileOptions o = options_.compile;
  o.search_budget_s = budget_s;
  auto p = std::make_unique<Program>(compile(g, {logits}, o));
  for (NodeId id : p->graph().input_ids()) {
    const Node& n = p->graph().node(id);
    auto it = weights_->inputs().find(n.name);
    if (it != weights_->inputs().end()) p->set(n.name, it->second);
  }
  compile_seconds_ += seconds_since(start);
  return p;
}

Array LlamaRunner::run(Program& p, const std::vector<int32_t>& tokens) {
  if (tokens.empty()) fail("llama: no tokens to run");
  int64_t n = static_cast<int64_t>(tokens.size());
  if (past_ + n > capacity_) {
    fail("llama: ", past_, " cached + ", n, " new tokens exceed the KV-cache capacity of ", capacity_,
         " positions (reset, or raise the capacity)");
  }
  for (int32_t t : tokens) {
    if (t < 0 || t >= config_.vocab) fail("llama: token ", t, " is outside the vocabulary [0, ", config_.vocab, ")");
  }
  p.set("tokens", Array::from_ints(tokens, {1, n}));
  p.bind("past", past_);
  p.run();
  past_ += n;
  return p.get("out0");
}

std::vector<float> LlamaRunner::forward(const std::vector<int32_t>& tokens) {
  return run(tokens.size() == 1 ? *decode_ : *prefill_, tokens).to_floats();
}

Array LlamaRunner::forward_all(const std::vector<int32_t>& tokens) {
  if (!all_) {
    all_ = build(std::nullopt, false, 0);
    all_->share_state(*decode_);
  }
  Array logits = run(*all_, tokens);
  return logits;
}

std::vector<int32_t> LlamaRunner::generate(const std::vector<int32_t>& prompt, int64_t max_new, Sampler& sampler,
                                           const std::function<bool(int32_t)>& on_token, GenerationStats* stats) {
  GenerationStats st;
  st.prompt_tokens = static_cast<int64_t>(prompt.size());
  std::vector<int32_t> out;
  auto start = std::chrono::steady_clock::now();
  std::vector<float> logits = forward(prompt);
  st.prefill_seconds = seconds_since(start);
  start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < max_new; ++i) {
    int32_t next = sampler(logits);
    out.push_back(next);
    ++st.generated_tokens;
    bool go_on = !on_token || on_token(next);
    if (!go_on || next == config_.eos_token || i + 1 == max_new || past_ >= capacity_) break;
    logits = forward({next});
  }
  st.decode_seconds = seconds_since(start);
  if (stats) *stats = st;
  return out;
}

void LlamaRunner::reset() {
  past_ = 0;
  decode_->reset_state();  // the programs share the buffers
}

std::string LlamaRunner::report() const {
  std::string r = "decode program:\n" + decode_->report() + "\nprefill program:\n" + prefill_->report();
  return r;
}

}  // namespace lumen::models
