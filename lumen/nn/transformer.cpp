#include "lumen/nn/transformer.h"

#include "lumen/core/error.h"

namespace lumen::nn {

namespace {

std::variant<RMSNorm, LayerNorm> make_norm(Graph& g, const std::string& prefix, const TransformerConfig& c) {
  if (c.norm == "rms") return RMSNorm(g, prefix, c.attention.dim, c.norm_eps);
  if (c.norm == "layer") return LayerNorm(g, prefix, c.attention.dim, c.norm_eps);
  fail("TransformerBlock: norm '", c.norm, "' is unknown (use rms or layer)");
}

std::variant<SwiGLU, MLP> make_mlp(Graph& g, const std::string& prefix, const TransformerConfig& c) {
  if (c.hidden <= 0) fail("TransformerBlock: the MLP hidden size must be positive");
  if (c.mlp == "swiglu") return SwiGLU(g, prefix, c.attention.dim, c.hidden, c.mlp_bias);
  return MLP(g, prefix, c.attention.dim, c.hidden, c.mlp, c.mlp_bias);
}

}  // namespace

TransformerBlock::TransformerBlock(Graph& g, const std::string& prefix, const TransformerConfig& c)
    : Module(g, prefix),
      config(c),
      input_norm(make_norm(g, child("input_layernorm"), c)),
      post_attention_norm(make_norm(g, child("post_attention_layernorm"), c)),
      self_attn(g, child("self_attn"), c.attention),
      mlp(make_mlp(g, child("mlp"), c)) {
  std::visit([&](const auto& m) { adopt(m); }, input_norm);
  adopt(self_attn);
  std::visit([&](const auto& m) { adopt(m); }, post_attention_norm);
  std::visit([&](const auto& m) { adopt(m); }, mlp);
}

Tensor TransformerBlock::norm(const std::variant<RMSNorm, LayerNorm>& n, const Tensor& x) const {
  return std::visit([&](const auto& m) { return m(x); }, n);
}

TransformerBlock::Output TransformerBlock::operator()(const Tensor& x, const std::optional<Tensor>& past_keys,
                                                      const std::optional<Tensor>& past_values) const {
  MultiHeadAttention::Output a = self_attn(norm(input_norm, x), past_keys, past_values);
  Tensor h = x + a.out;
  Tensor out = h + std::visit([&](const auto& m) { return m(norm(post_attention_norm, h)); }, mlp);
  return {out, a.keys, a.values, a.new_keys, a.new_values};
}

}  // namespace lumen::nn
