// Elementwise arithmetic, comparison and logic with numpy broadcasting and
// PyTorch type promotion, composed from primitives only.
#pragma once

#include <optional>

#include "lumen/core/tensor.h"

namespace lumen::ops {

// PyTorch's promotion for two tensor dtypes: bool < i8/u8/i32 < i64 < f16/bf16 < f32 < f64
// (f16 with bf16 gives f32).
DType promote_types(DType a, DType b);
// Casts both operands to their promoted dtype.
std::pair<Tensor, Tensor> promote(const Tensor& a, const Tensor& b);
// A rank-0 constant in `like`'s graph.
Tensor scalar_like(const Tensor& like, double value, DType dtype);

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);           // true division; integers give f32
Tensor floor_divide(const Tensor& a, const Tensor& b);  // rounds toward -inf
Tensor remainder(const Tensor& a, const Tensor& b);     // Python %: sign of the divisor
Tensor fmod(const Tensor& a, const Tensor& b);          // C fmod: sign of the dividend
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double exponent);
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor minimum(const Tensor& a, const Tensor& b);  // NaN-propagating
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi);
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);

Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& x);
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);

// Exact masked constants without blending (inf * 0 would give NaN):
// -inf where `mask` is true, 0 elsewhere (log2 of 0 and 1).
Tensor neg_inf_where(const Tensor& mask, DType dtype);
// `a` and `b` stacked along a new axis 0 (shape [2, ...]), exactly.
Tensor stack2(const Tensor& a, const Tensor& b);

}  // namespace lumen::ops
