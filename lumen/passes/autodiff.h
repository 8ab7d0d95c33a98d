// Reverse-mode automatic differentiation as a graph transform: the backward
// pass is appended to the same Graph as more primitive nodes, so forward and
// backward compile together into one Program (fused, scheduled and cached
// like any other graph).
#pragma once

#include <vector>

#include "lumen/core/tensor.h"

namespace lumen::passes {

// Gradients of the scalar `loss` (rank 0, or every dim 1; a float dtype)
// with respect to each of `wrt` (inputs, parameters, state or intermediate
// results of the same graph), in order, each with its tensor's shape and
// dtype. A tensor the loss does not depend on gets zeros. `wrt` may be seen
// through a view that reads each element at most once (slices, permutes,
// reshapes); a broadcast view is an error.
std::vector<Tensor> gradients(const Tensor& loss, const std::vector<Tensor>& wrt);

}  // namespace lumen::passes
