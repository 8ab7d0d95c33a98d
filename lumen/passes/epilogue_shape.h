// Epilogues in their contraction's shape: an elementwise op that reads a
// contraction (a sum of a product) through a reshape that splits its columns
// — a projection's output cut into heads, [1500, 384] read as [1, 9000, 64],
// then scaled — is computed in the contraction's shape and read through the
// reshape afterwards (a free view). The kernel that fuses the two then tiles
// the contraction's own rows and columns: in the split shape a register
// tile's rows were one row's column blocks, each row of the tile a different
// panel of the weight (measured 2x slower). Rewrites a chain of such ops
// (bias, scale, activation) one after the other. Values are unchanged.
#pragma once

#include <vector>

#include "lumen/core/graph.h"

namespace lumen::passes {

// The rewritten graph; `outputs` are rewritten to edges of it. Returns a copy
// of `graph` when nothing matches.
Graph epilogues_in_contraction_shape(const Graph& graph, std::vector<Edge>& outputs, int* rewritten = nullptr);

}  // namespace lumen::passes
