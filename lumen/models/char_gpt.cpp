#include "lumen/models/char_gpt.h"

#include <random>

#include "lumen/core/error.h"
#include "lumen/ops/loss.h"

namespace lumen::models {

namespace {

const CharGptConfig& checked(const CharGptConfig& c) {
  if (c.vocab <= 0 || c.context <= 0 || c.dim <= 0 || c.heads <= 0 || c.layers <= 0) {
    fail("CharGpt: vocab, context, dim, heads and layers must be positive (got vocab ", c.vocab, ", context ", c.context,
         ", dim ", c.dim, ", heads ", c.heads, ", layers ", c.layers, ")");
  }
  if (c.dim % c.heads != 0) fail("CharGpt: dim ", c.dim, " is not a multiple of heads ", c.heads);
  return c;
}

nn::TransformerConfig block_config(const CharGptConfig& c) {
  nn::TransformerConfig t;
  t.attention.dim = c.dim;
  t.attention.heads = c.heads;
  t.attention.causal = true;
  t.attention.qkv_bias = true;
  t.attention.out_bias = true;
  t.hidden = 4 * c.dim;
  t.norm = "layer";
  t.norm_eps = 1e-5;
  t.mlp = "gelu";
  t.mlp_bias = true;
  return t;
}

std::vector<nn::TransformerBlock> make_blocks(Graph& g, const CharGptConfig& c) {
  std::vector<nn::TransformerBlock> blocks;
  for (int64_t i = 0; i < c.layers; ++i) blocks.emplace_back(g, "blocks." + std::to_string(i), block_config(c));
  return blocks;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

CharGpt::CharGpt(Graph& g, const CharGptConfig& c)
    : config(checked(c)),
      tokens_(g, "wte", c.vocab, c.dim),
      positions_(g, "wpe", c.context, c.dim),
      blocks_(make_blocks(g, c)),
      norm_(g, "norm", c.dim, 1e-5),
      head_(g, "head", c.dim, c.vocab, false) {}

Tensor CharGpt::logits(const Tensor& tokens) const {
  if (tokens.rank() != 2 || !tokens.shape()[1].is_const() || tokens.shape()[1].value() > config.context) {
    fail("CharGpt: tokens must be [batch, seq] with a static seq of at most ", config.context, ", got ",
         to_string(tokens.shape()));
  }
  Tensor x = tokens_(tokens) + positions_.weight.slice(0, Expr(0), tokens.shape()[1]).unsqueeze(0);
  for (const nn::TransformerBlock& b : blocks_) x = b(x).out;
  return head_(norm_(x));
}

Tensor CharGpt::loss(const Tensor& tokens, const Tensor& targets) const {
  Tensor l = logits(tokens);
  Expr rows = tokens.shape()[0] * tokens.shape()[1];
  return ops::cross_entropy(l.reshape({rows, Expr(config.vocab)}), targets.reshape({rows}));
}

std::vector<std::pair<std::string, Tensor>> CharGpt::parameters() const {
  std::vector<std::pair<std::string, Tensor>> all;
  auto add = [&](const nn::Module& m) { all.insert(all.end(), m.parameters().begin(), m.parameters().end()); };
  add(tokens_);
  add(positions_);
  for (const nn::TransformerBlock& b : blocks_) add(b);
  add(norm_);
  add(head_);
  return all;
}

std::map<std::string, Array> CharGpt::initial_values(uint64_t seed) const {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 0.02);
  std::map<std::string, Array> values;
  for (const auto& [name, t] : parameters()) {
    std::vector<int64_t> shape;
    for (const Expr& d : t.shape()) shape.push_back(d.value());
    Array a(DType::F32, shape);
    bool gain = t.rank() == 1 && ends_with(name, ".weight");
    for (int64_t i = 0; i < a.numel(); ++i) a.set(i, t.rank() >= 2 ? normal(rng) : gain ? 1.0 : 0.0);
    values.emplace(name, std::move(a));
  }
  return values;
}

int64_t CharGpt::parameter_count() const {
  int64_t n = 0;
  for (const auto& [name, t] : parameters()) {
    int64_t k = 1;
    for (const Expr& d : t.shape()) k *= d.value();
    n += k;
  }
  return n;
}

}  // namespace lumen::models
