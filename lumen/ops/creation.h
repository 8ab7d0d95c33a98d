// Tensors made from nothing: constants, ranges, identity, triangles and
// seeded random numbers (a counter-based hash of the element index, so the
// same seed gives the same values on every backend).
#pragma once

#include <cstdint>

#include "lumen/core/graph.h"
#include "lumen/core/tensor.h"

namespace lumen::ops {

Tensor zeros(Graph& g, const Shape& shape, DType dtype = DType::F32);
Tensor ones(Graph& g, const Shape& shape, DType dtype = DType::F32);
Tensor full(Graph& g, const Shape& shape, double value, DType dtype = DType::F32);
// An exact integer fill (an i64 value past 2^53 stays exact).
Tensor full_int(Graph& g, const Shape& shape, int64_t value, DType dtype = DType::I64);
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
Tensor full_like(const Tensor& x, double value);
// start, start + step, ... < end (like torch.arange); integral arguments count exactly in i32
// (i64 for an i64 dtype), others in f32 (f64 for the 64-bit dtypes).
Tensor arange(Graph& g, double start, double end, double step = 1, DType dtype = DType::F32);
Tensor linspace(Graph& g, double start, double end, int64_t steps, DType dtype = DType::F32);
Tensor eye(Graph& g, int64_t n, int64_t m = -1, DType dtype = DType::F32);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
// Uniform in [0, 1) and standard normal; reproducible for a given seed.
Tensor rand(Graph& g, const Shape& shape, uint64_t seed, DType dtype = DType::F32);
Tensor randn(Graph& g, const Shape& shape, uint64_t seed, DType dtype = DType::F32);

}  // namespace lumen::ops
