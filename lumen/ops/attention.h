// Scaled dot-product attention composed from matmul, masks and softmax.
// (Flash-style fused kernels are the compiler's job, not this file's.)
#pragma once

#include <optional>

#include "lumen/core/tensor.h"

namespace lumen::ops {

// q [..., Hq, L, E], k [..., Hk, S, E], v [..., Hk, S, Ev]. A bool mask marks
// positions that take part; a float mask is added to the scores. With
// enable_gqa, each group of Hq/Hk query heads shares one key/value head.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const std::optional<Tensor>& attn_mask = std::nullopt, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt, bool enable_gqa = false);

// Repeats each head `times` times along dim -3 (a view).
Tensor repeat_heads(const Tensor& x, int64_t times);

}  // namespace lumen::ops
