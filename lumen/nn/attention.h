// Multi-head attention with grouped-query heads, causal masking, rotary
// embeddings and an optional key/value cache (past keys/values in, full
// keys/values out, so a decoder can keep them as persistent state).
#pragma once

#include <optional>

#include "lumen/nn/layers.h"

namespace lumen::nn {

struct AttentionConfig {
  int64_t dim = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;  // 0 means heads (plain multi-head attention)
  int64_t head_dim = 0;  // 0 means dim / heads
  bool causal = true;
  // With causal masking: the query at position i sees only keys j with
  // i - sliding_window < j <= i (Mistral, Qwen2; as transformers). 0: all j <= i.
  int64_t sliding_window = 0;
  std::optional<double> rope_theta;  // rotary embeddings when set
  bool qkv_bias = false;
  bool out_bias = false;
};

class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(Graph& g, const std::string& prefix, AttentionConfig config);

  struct Output {
    Tensor out;     // [batch, seq, dim]
    Tensor keys;    // [batch, kv_heads, past + seq, head_dim] (for a cache)
    Tensor values;
    Tensor new_keys;  // [batch, kv_heads, seq, head_dim]: this step's (rotated) keys, to append to a cache
    Tensor new_values;
  };
  // x [batch, seq, dim]; past keys/values [batch, kv_heads, past, head_dim].
  Output operator()(const Tensor& x, const std::optional<Tensor>& past_keys = std::nullopt,
                    const std::optional<Tensor>& past_values = std::nullopt) const;

  AttentionConfig config;
  Linear q_proj, k_proj, v_proj, o_proj;
};

}  // namespace lumen::nn
