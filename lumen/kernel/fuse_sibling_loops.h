// Sibling reduction loops fused (loop fusion of independent integer sums).
//
// Two serial loops of the same extent at one level of a kernel, each only
// adding into i32 accumulators of its own (a block's integer sums: Q4_K's two
// nibble chains over the same weight bytes), with only accumulator inits
// between them and neither reading the other's accumulators, run as one loop:
// the bytes both read are loaded once, and the two vpdpbusd chains interleave.
// Integer sums: the order of the terms changes nothing.
#pragma once

#include "lumen/kernel/ir.h"

namespace lumen::kernel {

// Fuses such loops of `kernel`; returns how many loops it removed.
int fuse_sibling_loops(Kernel& kernel);

}  // namespace lumen::kernel
