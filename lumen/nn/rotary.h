// Rotary position embeddings (RoPE, the "rotate half" form used by Llama,
// Mistral and Qwen2 in Hugging Face transformers).
#pragma once

#include "lumen/core/tensor.h"

namespace lumen::nn {

// cos and sin tables [seq, head_dim] for positions offset, offset+1, ...,
// offset+seq-1 (`offset` may be a dynamic dim, e.g. the KV-cache length).
struct RotaryTables {
  Tensor cos, sin;
};
RotaryTables rotary_tables(Graph& g, const Expr& seq, const Expr& offset, int64_t head_dim, double theta);

// x [..., seq, head_dim] rotated: x·cos + rotate_half(x)·sin.
Tensor apply_rotary(const Tensor& x, const RotaryTables& tables);

}  // namespace lumen::nn
