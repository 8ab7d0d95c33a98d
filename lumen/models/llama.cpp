#include "lumen/models/llama.h"

#include <cmath>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/models/rope_scaling.h"
#include "lumen/ops/attention.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/linalg.h"
#include "lumen/ops/math.h"
#include "lumen/ops/movement.h"
#include "lumen/ops/normalization.h"
#include "lumen/ops/reduce.h"

namespace lumen::models {

namespace {

nn::TransformerConfig block_config(const LlamaConfig& c, int64_t layer) {
  nn::TransformerConfig t;
  t.attention.dim = c.dim;
  t.attention.heads = c.heads;
  t.attention.kv_heads = c.kv_heads;
  t.attention.head_dim = c.head_dim;
  t.attention.causal = true;
  t.attention.rope_theta = c.rope_theta;
  t.attention.qkv_bias = c.qkv_bias;
  t.attention.out_bias = c.out_bias;
  if (c.windowed(layer)) t.attention.sliding_window = c.sliding_window;
  t.hidden = c.hidden;
  t.norm = "rms";
  t.norm_eps = c.norm_eps;
  t.mlp = "swiglu";  // the gate / up / down parameters; forward applies config.activation
  t.mlp_bias = c.mlp_bias;
  return t;
}

std::vector<nn::TransformerBlock> make_layers(Graph& g, const LlamaConfig& c) {
  c.validate();
  std::vector<nn::TransformerBlock> out;
  for (int64_t i = 0; i < c.layers; ++i) out.emplace_back(g, "model.layers." + std::to_string(i), block_config(c, i));
  return out;
}

// [batch, seq, heads·head_dim] -> [batch, heads, seq, head_dim]
Tensor split_heads(const Tensor& x, int64_t heads, int64_t head_dim) {
  return x.reshape({x.shape()[0], x.shape()[1], Expr(heads), Expr(head_dim)}).permute({0, 2, 1, 3});
}

// cos and sin of angles [..., head_dim / 2], duplicated for the two halves
// (rotate-half form), times `scale` (YaRN's attention factor).
nn::RotaryTables tables_of(const Tensor& angles, double scale) {
  Tensor full = ops::concat({angles, angles}, static_cast<int>(angles.rank()) - 1);
  if (scale == 1.0) return {ops::cos(full), ops::sin(full)};
  return {ops::cos(full) * scale, ops::sin(full) * scale};
}

}  // namespace

Llama::Llama(Graph& g, const LlamaConfig& c)
    : Module(g, ""),
      config(c),
      embed_tokens(g, "model.embed_tokens", c.vocab, c.dim),
      layers(make_layers(g, c)),
      norm(g, "model.norm", c.dim, c.norm_eps) {
  adopt(embed_tokens);
  for (const nn::TransformerBlock& b : layers) adopt(b);
  adopt(norm);
  if (!c.tie_embeddings) {
    lm_head.emplace(g, "lm_head", c.dim, c.vocab, false);
    adopt(*lm_head);
  }
  if (c.qk_norm) add_norm_pairs(g, "self_attn.q_norm", "self_attn.k_norm", c.head_dim, q_norms, k_norms);
  if (c.sandwich_norms) {
    add_norm_pairs(g, "pre_feedforward_layernorm", "post_feedforward_layernorm", c.dim, pre_feedforward_norms,
                   post_feedforward_norms);
  }
  if (c.rope_freq_factors) rope_freqs = parameter("rope_freqs.weight", {Expr(c.head_dim / 2)});
}

void Llama::add_norm_pairs(Graph& g, const std::string& first, const std::string& second, int64_t dim,
                           std::vector<nn::RMSNorm>& firsts, std::vector<nn::RMSNorm>& seconds) {
  for (int64_t i = 0; i < config.layers; ++i) {
    std::string layer = "model.layers." + std::to_string(i) + ".";
    firsts.emplace_back(g, layer + first, dim, config.norm_eps);
    seconds.emplace_back(g, layer + second, dim, config.norm_eps);
    adopt(firsts.back());
    adopt(seconds.back());
  }
}

std::string Llama::cache_name(int64_t layer, bool keys) {
  return "model.layers." + std::to_string(layer) + (keys ? ".self_attn.k_cache" : ".self_attn.v_cache");
}

// theta^(-2i/d), then the config's scaling, as transformers computes it.
Tensor Llama::inverse_frequencies(const Expr& length) const {
  return rope_inverse_frequencies(graph(), config, rope_freqs, length);
}

nn::RotaryTables Llama::rope(const Expr& seq, const Expr& offset, std::optional<Expr> length) const {
  Shape pos_shape{seq, Expr(1)};
  Tensor pos = graph().iota(simplify(loop_index(pos_shape, 0) + offset), pos_shape, DType::I32).cast(DType::F32);
  Expr seen = length ? *length : simplify(offset + seq);
  return tables_of(pos * inverse_frequencies(seen), rope_attention_factor(config.rope_scaling));  // [seq, half]
}

nn::RotaryTables Llama::rope(const Tensor& positions) const {
  if (positions.rank() != 2 || positions.dtype() != DType::I32) {
    fail("llama: rotary positions must be [batch, seq] i32, got ", dtype_name(positions.dtype()), " ", to_string(positions.shape()));
  }
  const Expr& batch = positions.shape()[0];
  const Expr& seq = positions.shape()[1];
  if (config.rope_scaling.type == "dynamic") {
    fail("llama: dynamic rope scaling follows one sequence's length; positions given per row (the paged server) "
         "do not have it (run the model with lumen.models.Llama)");
  }
  Tensor pos = positions.cast(DType::F32).reshape({batch, seq, Expr(1)});
  Tensor inv = inverse_frequencies(Expr(config.max_position)).reshape({Expr(1), Expr(1), Expr(config.head_dim / 2)});
  nn::RotaryTables t = tables_of(pos * inv, rope_attention_factor(config.rope_scaling));
  Shape per_row{batch, Expr(1), seq, Expr(config.head_dim)};
  return {t.cos.reshape(per_row), t.sin.reshape(per_row)};
}

Tensor Llama::rms(const nn::RMSNorm& n, const Tensor& x) const {
  if (!config.norm_plus_one) return n(x);
  return ops::rms_norm(x, 1, n.weight + 1.0, n.eps);  // Gemma: x̂ · (1 + w)
}

Tensor Llama::block(int64_t layer, const Tensor& x, const nn::RotaryTables& rope, const Attend& attend) const {
  const nn::TransformerBlock& b = layers[static_cast<size_t>(layer)];
  const nn::MultiHeadAttention& a = b.self_attn;
  const Expr& batch = x.shape()[0];
  const Expr& seq = x.shape()[1];
  Tensor h = rms(std::get<nn::RMSNorm>(b.input_norm), x);
  Tensor q = split_heads(a.q_proj(h), config.heads, config.head_dim);
  Tensor k = split_heads(a.k_proj(h), config.kv_heads, config.head_dim);
  if (config.qk_norm) {  // Qwen3: each head normalised before rotary
    q = rms(q_norms[static_cast<size_t>(layer)], q);
    k = rms(k_norms[static_cast<size_t>(layer)], k);
  }
  q = nn::apply_rotary(q, rope);
  k = nn::apply_rotary(k, rope);
  Tensor v = split_heads(a.v_proj(h), config.kv_heads, config.head_dim);
  Tensor attended = attend(layer, q, k, v);
  Tensor merged = attended.permute({0, 2, 1, 3}).reshape({batch, seq, Expr(config.heads * config.head_dim)});
  const nn::RMSNorm& post_attention = std::get<nn::RMSNorm>(b.post_attention_norm);
  const nn::SwiGLU& mlp = std::get<nn::SwiGLU>(b.mlp);
  auto mlp_of = [&](const Tensor& in) { return mlp.down_proj(nn::activate(mlp.gate_proj(in), config.activation) * mlp.up_proj(in)); };
  if (!config.sandwich_norms) {
    Tensor out = x + a.o_proj(merged);
    return out + mlp_of(rms(post_attention, out));
  }
  // Gemma-2: post_attention_layernorm normalises the attention's output; the MLP has norms of its own on both sides.
  auto i = static_cast<size_t>(layer);
  Tensor out = x + rms(post_attention, a.o_proj(merged));
  return out + rms(post_feedforward_norms[i], mlp_of(rms(pre_feedforward_norms[i], out)));
}

Tensor Llama::attention(const Tensor& q, const Tensor& keys, const Tensor& values, const Tensor& mask) const {
  bool grouped = config.kv_heads != config.heads;
  std::optional<double> scale;
  if (config.attention_scale > 0) scale = config.attention_scale;
  if (config.attn_softcap <= 0) return ops::scaled_dot_product_attention(q, keys, values, mask, false, scale, grouped);
  // Gemma-2: scores soft-capped before the mask, as transformers' eager attention.
  int64_t group = config.heads / config.kv_heads;
  Tensor k = grouped ? ops::repeat_heads(keys, group) : keys;
  Tensor v = grouped ? ops::repeat_heads(values, group) : values;
  double s = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(config.head_dim));
  Tensor scores = ops::matmul(q, k.transpose(-2, -1)) * (s / config.attn_softcap);
  scores = ops::tanh(scores) * config.attn_softcap;
  scores = ops::where(mask, scores, ops::scalar_like(scores, -INFINITY, DType::F32));
  return ops::matmul(ops::softmax(scores, -1), v);
}

Tensor Llama::forward(const Tensor& tokens, const nn::RotaryTables& rope, const Attend& attend, std::optional<Expr> logits_at) {
  if (tokens.rank() != 2) fail("llama: tokens must be [batch, seq], got ", to_string(tokens.shape()));
  Tensor x = embed_tokens(tokens);
  // transformers multiplies by sqrt(hidden_size) rounded to the activations' dtype (f32).
  if (config.scale_embeddings) x = x * static_cast<double>(static_cast<float>(std::sqrt(static_cast<double>(config.dim))));
  for (int64_t i = 0; i < static_cast<int64_t>(layers.size()); ++i) x = block(i, x, rope, attend);
  if (logits_at) x = x.slice(1, *logits_at, simplify(*logits_at + 1));
  x = rms(norm, x);
  Tensor logits = lm_head ? (*lm_head)(x) : ops::linear(x, embed_tokens.weight);
  if (config.final_softcap <= 0) return logits;
  return ops::tanh(logits / config.final_softcap) * config.final_softcap;  // Gemma-2
}

Tensor Llama::step(const Tensor& tokens, const Expr& past, int64_t capacity, std::optional<Expr> logits_at,
                   std::optional<Expr> real) {
  if (tokens.rank() != 2) fail("llama: tokens must be [batch, seq], got ", to_string(tokens.shape()));
  const Expr& batch = tokens.shape()[0];
  const Expr& seq = tokens.shape()[1];
  if (!batch.is_const()) fail("llama: the batch size must be static");
  Graph& g = graph();
  g.require(le(past + seq, Expr(capacity)),
            "llama: the KV cache holds " + std::to_string(capacity) + " positions; past + seq exceeds it (reset or raise the capacity)");
  Shape cache_shape{batch, Expr(config.kv_heads), Expr(capacity), Expr(config.head_dim)};
  Attend attend = [&](int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v) {
    // A half-precision cache holds the values rounded as they are stored and is read back widened.
    Tensor k_cache = g.state(cache_name(layer, true), cache_shape, cache_dtype);
    Tensor v_cache = g.state(cache_name(layer, false), cache_shape, cache_dtype);
    auto wide = [](const Tensor& t) { return t.dtype() == DType::F32 ? t : t.cast(DType::F32); };
    auto narrow = [&](const Tensor& t) { return t.dtype() == cache_dtype ? t : t.cast(cache_dtype); };
    Tensor keys = ops::concat({wide(k_cache.slice(2, Expr(0), past)), k}, 2);
    Tensor values = ops::concat({wide(v_cache.slice(2, Expr(0), past)), v}, 2);
    g.assign(k_cache.slice(2, past, simplify(past + seq)), narrow(k));
    g.assign(v_cache.slice(2, past, simplify(past + seq)), narrow(v));
    // query i (at position past + i) sees keys j <= past + i (and > past + i - window)
    Shape s{seq, simplify(past + seq)};
    Expr key = loop_index(s, 1), query = loop_index(s, 0) + past;
    Expr visible = le(key, query);
    if (config.windowed(layer)) visible = logical_and(visible, gt(key, query - Expr(config.sliding_window)));
    return attention(q, keys, values, g.iota(visible, s, DType::Bool));
  };
  Expr fed = real ? *real : logits_at ? simplify(*logits_at + 1) : seq;
  return forward(tokens, rope(seq, past, simplify(past + fed)), attend, logits_at);
}

}  // namespace lumen::models
