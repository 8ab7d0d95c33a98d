// The hand-written schedule used without search (budget 0) and as the seed
// the search starts from.
#pragma once

#include <vector>

#include "lumen/core/graph.h"
#include "lumen/kernel/schedule.h"

namespace lumen::kernel {

struct Target {
  int f32_lanes = 16;  // SIMD width in f32 elements
  int threads = 2;
  bool gpu = false;  // a GPU backend: the schedule space adds work-group knobs
  bool bf16_dot = false;  // a bf16 pair dot product instruction (AVX512-BF16): pair_dot joins the space
  int64_t l2_bytes = 0;   // the data cache a thread's packed panel should stay in; 0: unknown
};

std::vector<Action> heuristic_actions(const Graph& graph, NodeId node, const std::vector<bool>& materialized,
                                      const Target& target);

}  // namespace lumen::kernel
