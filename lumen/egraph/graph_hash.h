// A canonical hash of a Graph: equal for graphs that compute the same
// expressions (same ops, attributes, views, inputs and outputs) whatever the
// order their nodes were added in. Used to tell extracted candidates apart
// and as the graph-level key of the tuning cache.
#pragma once

#include <cstdint>
#include <vector>

#include "lumen/core/graph.h"

namespace lumen::egraph {

uint64_t graph_hash(const Graph& graph);
// The same with `outputs` (unnamed) in place of the graph's marked outputs.
uint64_t graph_hash(const Graph& graph, const std::vector<Edge>& outputs);
// The same, except that add and mul operands hash alike in either order:
// programs that differ only so are one program to measure.
uint64_t graph_hash_unordered(const Graph& graph, const std::vector<Edge>& outputs);

}  // namespace lumen::egraph
