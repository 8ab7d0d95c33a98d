// The adjoint of a View: given the gradient with respect to what a consumer
// reads through a view, the gradient with respect to the producer's buffer.
// Every base position receives the sum of the gradients of the logical
// positions that read it (padding reads nothing, a broadcast position is
// read many times), built from movement ops, SumReduce and Add only.
#pragma once

#include "lumen/core/tensor.h"
#include "lumen/core/view.h"

namespace lumen::passes {

// `grad` has the view's shape; the result has its base shape (contiguous).
// Throws lumen::Error naming the view when its strides cannot be ordered
// (symbolic strides the simplifier cannot compare) or when overlapping
// windows would need more than a few hundred shifted copies.
Tensor view_adjoint(const View& view, const Tensor& grad);

}  // namespace lumen::passes
