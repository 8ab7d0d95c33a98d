// Bounded float accumulation: a rewrite of the loop IR that keeps every f32
// sum accumulator (each SIMD lane of it) from adding more than kSumBlock terms.
//
// A serial reduction loop that would add more terms than that is cut into
// blocks; each block sums into a fresh accumulator which is then added, once,
// into the original one. The outer accumulator is bounded the same way
// (blocks of blocks), so a sum of n terms is a tree of ceil(log_kSumBlock(n))
// levels of at most kSumBlock terms each, and its rounding error is at most
// (levels · kSumBlock + a few)·u·Σ|x| rather than n·u·Σ|x| (u = 2^-24).
// docs/semantics.md states the contract. Short contractions (matmul register
// tiles with K <= kSumBlock) are left as they are.
#pragma once

#include <cstdint>

#include "lumen/kernel/ir.h"

namespace lumen::kernel {

inline constexpr int64_t kSumBlock = 1024;

// Rewrites `kernel` in place for a target with `simd_lanes` f32 lanes (a
// SIMD loop keeps one partial sum per lane); returns how many loops were cut.
// The CPU backend applies it when rendering, after every IR decision.
int bound_float_sums(Kernel& kernel, int simd_lanes, int64_t block = kSumBlock);

}  // namespace lumen::kernel
