// The derivative rule of each primitive (ARCHITECTURE.md §3): given the
// gradient with respect to a node's output, the gradient with respect to
// each operand as the operand is read (its logical shape, before the edge's
// view). Built only from primitives; view_adjoint.h takes it the rest of the
// way to the producer.
#pragma once

#include <vector>

#include "lumen/core/graph.h"
#include "lumen/core/tensor.h"

namespace lumen::passes {

// One entry per operand of node `id`; an undefined Tensor where no gradient
// flows (LessThan, integer operands, Gather's indices, Mod's integer use).
std::vector<Tensor> operand_gradients(Graph& graph, NodeId id, const Tensor& grad);

// Whether gradients flow through values of this dtype (float dtypes only).
bool differentiable(DType dtype);

}  // namespace lumen::passes
