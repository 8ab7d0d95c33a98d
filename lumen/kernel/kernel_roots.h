// Kernel roots: what a kernel for a materialised node computes at its output
// points once inlined epilogues are looked through — a contraction, a
// reduction, or a small reduction written out inline. Fusion, lowering, the
// heuristic and the schedule space ask these questions the same way.
#pragma once

#include <vector>

#include "lumen/core/graph.h"

namespace lumen::kernel {

// Reductions over at most this many elements (a static extent) are expanded
// inline into a value expression instead of a loop with an accumulator.
inline constexpr int64_t kInlineReduceExtent = 4;
bool is_small_reduce(const Node& node);

// Whether `reduce` sums a product as it is stored (read in order, possibly reshaped: Winograd's
// transforms sum two of its axes as one). A product recorded in another order (core/layout.h)
// and read through a permutation is not a contraction.
bool sums_product_in_place(const Graph& graph, const Node& reduce);

// The contraction (an inlined sum of an inlined product) a kernel for `node`
// computes at its output points: the node itself, or one reached through
// inlined elementwise consumers with the same shape (an epilogue such as a
// bias and an activation, a ReLU's small max over a stacked pair included).
// -1 if there is none.
NodeId contraction_of(const Graph& graph, NodeId node, const std::vector<bool>& materialized);
// The reduction (any sum or max over a loop) a kernel for `node` computes at
// its output points, found through epilogues of the same shape read through
// plain edges only (rfactor lays its partial sums out by the reduction's own
// coordinates, so a reshaping epilogue does not qualify): what rfactor cuts.
// -1 if none.
NodeId outer_reduction_of(const Graph& graph, NodeId node, const std::vector<bool>& materialized);

}  // namespace lumen::kernel
