// Reduction operands kept for a later loop.
//
// A row kernel such as softmax sums an expensive value E over a row
// (exp(x - max)) and then, in a sibling loop of the same shape, stores an
// expression of E at every point of that row (E / sum). Lowering computes E in
// both loops. When the later loop's store goes to the same points the sum
// walked, the sum loop can store E into the output as it goes and the later
// loop read it back: one transcendental per element instead of two, and the
// row is still in L1 when it is read again.
#pragma once

#include "lumen/kernel/ir.h"

namespace lumen::kernel {

// Rewrites every such pair of loops in `kernel`; returns how many it rewrote.
// Applies only where E contains a transcendental (Exp2, Log2, Sin), the output
// stores E's dtype exactly, and nothing between the loops touches the output.
int reuse_reduction_operands(Kernel& kernel);

}  // namespace lumen::kernel
