#include "lumen/nn/attention.h"

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/ops/attention.h"
#include "lumen/ops/movement.h"
#include "lumen/nn/rotary.h"

namespace lumen::nn {

namespace {

AttentionConfig resolved(AttentionConfig c, const std::string& prefix) {
  if (c.dim <= 0 || c.heads <= 0) fail("MultiHeadAttention '", prefix, "': dim and heads must be positive");
  if (c.kv_heads == 0) c.kv_heads = c.heads;
  if (c.head_dim == 0) {
    if (c.dim % c.heads != 0) fail("MultiHeadAttention '", prefix, "': dim ", c.dim, " is not divisible by ", c.heads, " heads");
    c.head_dim = c.dim / c.heads;
  }
  if (c.sliding_window < 0 || (c.sliding_window > 0 && !c.causal)) {
    fail("MultiHeadAttention '", prefix, "': sliding_window ", c.sliding_window, " needs causal attention and must be >= 0");
  }
  if (c.heads % c.kv_heads != 0) {
    fail("MultiHeadAttention '", prefix, "': ", c.heads, " query heads cannot share ", c.kv_heads, " key/value heads");
  }
  return c;
}

// [batch, seq, heads·head_dim] -> [batch, heads, seq, head_dim]
Tensor split_heads(const Tensor& x, int64_t heads, int64_t head_dim) {
  return x.reshape({x.shape()[0], x.shape()[1], Expr(heads), Expr(head_dim)}).permute({0, 2, 1, 3});
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(Graph& g, const std::string& prefix, AttentionConfig c)
    : Module(g, prefix),
      config(resolved(c, prefix)),
      q_proj(g, child("q_proj"), config.dim, config.heads * config.head_dim, config.qkv_bias),
      k_proj(g, child("k_proj"), config.dim, config.kv_heads * config.head_dim, config.qkv_bias),
      v_proj(g, child("v_proj"), config.dim, config.kv_heads * config.head_dim, config.qkv_bias),
      o_proj(g, child("o_proj"), config.heads * config.head_dim, config.dim, config.out_bias) {
  for (const Module* m : {static_cast<const Module*>(&q_proj), static_cast<const Module*>(&k_proj),
                          static_cast<const Module*>(&v_proj), static_cast<const Module*>(&o_proj)}) {
    adopt(*m);
  }
}

MultiHeadAttention::Output MultiHeadAttention::operator()(const Tensor& x, const std::optional<Tensor>& past_keys,
                                                          const std::optional<Tensor>& past_values) const {
  if (x.rank() != 3) fail("MultiHeadAttention '", prefix(), "': expects [batch, seq, dim], got ", to_string(x.shape()));
  if (past_keys.has_value() != past_values.has_value()) {
    fail("MultiHeadAttention '", prefix(), "': pass both past keys and past values, or neither");
  }
  const Expr& seq = x.shape()[1];
  Expr past = past_keys ? past_keys->shape()[2] : Expr(0);
  Tensor q = split_heads(q_proj(x), config.heads, config.head_dim);
  Tensor k = split_heads(k_proj(x), config.kv_heads, config.head_dim);
  Tensor v = split_heads(v_proj(x), config.kv_heads, config.head_dim);
  if (config.rope_theta) {
    RotaryTables tables = rotary_tables(graph(), seq, past, config.head_dim, *config.rope_theta);
    q = apply_rotary(q, tables);
    k = apply_rotary(k, tables);
  }
  Tensor new_k = k, new_v = v;
  if (past_keys) {
    k = ops::concat({*past_keys, k}, 2);
    v = ops::concat({*past_values, v}, 2);
  }
  std::optional<Tensor> mask;
  if (config.causal) {  // query i (at position past + i) sees keys j <= past + i (and > past + i - window)
    Shape s{seq, simplify(past + seq)};
    Expr key = loop_index(s, 1), query = loop_index(s, 0) + past;
    Expr visible = le(key, query);
    if (config.sliding_window > 0) visible = logical_and(visible, gt(key, query - Expr(config.sliding_window)));
    mask = graph().iota(visible, s, DType::Bool);
  }
  Tensor attended = ops::scaled_dot_product_attention(q, k, v, mask, false, std::nullopt,
                                                      config.kv_heads != config.heads);
  Tensor merged = attended.permute({0, 2, 1, 3}).reshape({x.shape()[0], seq, Expr(config.heads * config.head_dim)});
  return {o_proj(merged), k, v, new_k, new_v};
}

}  // namespace lumen::nn
