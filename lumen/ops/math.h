// Unary math and activation functions, composed from primitives. Where a
// function has no exact composition (erf, tanh), the approximation and its
// error bound are stated next to it.
#pragma once

#include "lumen/core/tensor.h"

namespace lumen::ops {

Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor gelu(const Tensor& x, bool tanh_approximation = false);
Tensor silu(const Tensor& x);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor mish(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);  // half to even, like torch.round
Tensor trunc(const Tensor& x);

// mask ? a : b by blending, for when both branches are known finite
// (cheaper than where(); inf or NaN in the unselected branch would leak).
Tensor select_finite(const Tensor& mask, const Tensor& a, const Tensor& b);

}  // namespace lumen::ops
