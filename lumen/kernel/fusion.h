// Fusion: which graph nodes get a buffer (and a kernel) and which are
// inlined into their consumers' kernels.
//
// Inputs, outputs and Contiguous nodes always get buffers. Everything else
// starts inlined; every kernel is then lowered and each node's evaluation
// count is compared with its size. A node recomputed too often (an expensive
// value read through a broadcasting view, a reduction re-run per element) is
// materialised, and the check repeats until nothing changes. So fusion
// boundaries come from measured recomputation, not from op-specific patterns.
#pragma once

#include <vector>

#include "lumen/core/graph.h"

namespace lumen::kernel {

struct FusionOptions {
  // A node is materialised when it is evaluated more than `min_recompute`
  // times per element and the extra work exceeds `max_extra_work` ALU ops per
  // element (a store and a load cost about that much memory traffic).
  double min_recompute = 1.5;
  double max_extra_work = 32.0;
  double assumed_dim = 64;  // stands in for dynamic dims
};

struct Partition {
  std::vector<bool> materialized;  // per node
  std::vector<NodeId> kernels;     // materialised non-input nodes, in topological order
  // Per materialised node: the ALU ops its kernel spends per element it
  // makes, counting every evaluation of the nodes it inlines (a matmul's
  // product K times; dynamic dims at `assumed_dim`); 0 for other nodes.
  std::vector<double> ops_per_element;
  int rounds = 0;                  // refinement rounds it took
};

Partition partition(const Graph& graph, const std::vector<Edge>& outputs, const FusionOptions& options = {});

}  // namespace lumen::kernel
