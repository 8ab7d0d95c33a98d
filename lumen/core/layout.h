// Layout following: an elementwise op whose operands are read transposed is computed in the
// order its operands lie in memory, not in its logical order.
//
// Every node's output is stored in its logical order, so an op over a transposed view (the
// activation after a convolution computed channels-last, [N, C, H, W] over [N, H, W, C]
// memory) would store its result NCHW: a transpose wherever it is stored, and a second one
// where the next channels-last op reads it back. Built in memory order instead, the result is
// a node in that order and the logical tensor a permuted view of it, so readers that want the
// memory order see contiguous rows. Only the layout changes: the values are the same.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "lumen/core/tensor.h"

namespace lumen {

// Where an elementwise op over some operands is computed instead of its logical order.
struct MemoryOrder {
  std::vector<int> order;  // the logical dims, outermost first in memory
  Shape permuted;          // the logical shape in that order
  Shape merged;            // with the dims that every operand reads as one run merged
};

// The memory order to compute an elementwise op over `operands` (all of one shape) in, when
// that is not the logical order: the operands that read every element of their node once
// through one strided layer (no broadcast, no padding) agree on a memory order whose innermost
// dim is not the last one, and none of them reads its node in logical order. Dims of extent 1
// keep their places.
std::optional<MemoryOrder> memory_order(const std::vector<Tensor>& operands);

// `op(operands)` (an elementwise op over operands of one shape) computed in their memory order
// and seen in logical order again, or nothing where memory_order finds the logical order: the
// one way every elementwise builder (Tensor's primitives, a max over a stacked pair) follows it.
std::optional<Tensor> in_memory_order(const std::vector<Tensor>& operands,
                                      const std::function<Tensor(const std::vector<Tensor>&)>& op);

}  // namespace lumen
