// Matrix products, all as broadcast Mul + SumReduce of views.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lumen/core/tensor.h"

namespace lumen::ops {

Tensor matmul(const Tensor& a, const Tensor& b);  // torch.matmul semantics (1-D, batching, broadcasting)
Tensor bmm(const Tensor& a, const Tensor& b);     // [B, M, K] x [B, K, N]
// x @ weight.T + bias, weight [out, in].
Tensor linear(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt);
Tensor outer(const Tensor& a, const Tensor& b);
// Einstein summation over one or two (or more) operands, e.g. "bij,bjk->bik",
// "ii->i", "...ij,...jk"; without "->" the output is the labels used once, sorted.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);

}  // namespace lumen::ops
