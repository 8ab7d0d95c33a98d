// A gather whose index is `position + cond·offset` (position and offset
// integer Exprs of the loop variables, cond a boolean value) reads one of two
// places known without the data: it lowers to a select of two plain reads
// instead of a data-dependent one. `where(c, a, b)` is such a gather from the
// stacked pair [b, a] (ops/elementwise.cpp), so masks written with `where`
// become selects the backends vectorise, and the index no longer hides which
// elements are read.
#pragma once

#include <optional>

#include "lumen/core/graph.h"
#include "lumen/kernel/ir.h"

namespace lumen::kernel {

struct TwoPlaceIndex {
  Value cond;       // Bool: reads position + offset where true, position where false
  Expr position;
  Expr offset;
};

// The two places a gather index value `index` reads, when it has that form
// and both places provably lie in [0, size). Nothing otherwise.
std::optional<TwoPlaceIndex> two_place_index(const Value& index, const Expr& size);

// The flat places of its table a two-place gather `node` reads at its own
// output points (loop_indices of its shape): `unset` where its condition is
// false, `set` where true. Nothing when its index does not have that form.
struct TwoPlaces {
  Expr unset;
  Expr set;
};
std::optional<TwoPlaces> two_places(const Graph& graph, NodeId node, const std::vector<bool>& materialized);

// The same, seen in the graph: the nodes a two-place gather `node` reads
// (through elementwise nodes that are not materialised, such as the stacked
// pair's add) at its own output points, in order, with its shape. A kernel
// whose output is where(c, a, b) over a contraction `a` is that contraction's
// kernel with a select epilogue.
std::vector<NodeId> two_place_sources(const Graph& graph, NodeId node, const std::vector<bool>& materialized);

// The constants that give a two-place gather's index its position and
// offset, when the index is built as where() builds it (an Add of a constant
// and a Mul of a cast boolean by a constant); empty otherwise. Sliced
// execution computes them at chunk-relative coordinates (slicing.h).
std::vector<NodeId> two_place_index_constants(const Graph& graph, NodeId node, const std::vector<bool>& materialized);

}  // namespace lumen::kernel
