// How a split of one axis of a buffer shows through a View.
//
// A producer's output split along `base_axis` into `parts` equal chunks (rank
// r holds chunk r) is read by a consumer through a View. The split "shows
// through" the view when one output axis d carries it: every valid element
// whose output index lies in chunk c of d reads base positions inside chunk c.
// Then each rank can read its own chunk through a local view of its local
// buffer, with no communication. Movement that keeps the split axis whole
// (permutes, reshapes that split or merge it as the outermost part, slices and
// padding of other axes, broadcasts) shows it through; slicing the split axis
// itself, or reading it as an inner part of a merged dim, does not (the caller
// gathers the buffer instead).
//
// The analysis works on the flat index of each view layer: with P the split
// axis's stride and Q = P * extent, the terms of the index that are multiples
// of Q only move between chunks' blocks, one dim d of span T_d * S_d == Q
// selects the chunk, and everything else must stay below one step of d.
// Conditions on dynamic dims that the bounds cannot prove are returned; they
// hold for any well-formed global view and are checked when dims are bound.
#pragma once

#include <optional>
#include <vector>

#include "lumen/core/view.h"

namespace lumen::dist {

struct SplitThrough {
  int axis = -1;                   // the view's output axis that carries the split
  View local;                      // from the local base (split axis / parts) to the local output shape
  std::vector<Expr> conditions;    // must hold at run time (1 when proven)
};

// Nothing when the split does not show through `view` (or the sizes do not divide).
std::optional<SplitThrough> split_through(const View& view, int base_axis, int64_t parts);

// `shape` with dim `axis` divided by `parts` (which must divide it).
Shape split_shape(const Shape& shape, int axis, int64_t parts);

// Builds a View from explicit layers (the first over `base`, each next one
// over the contiguous logical array of the previous layer's shape).
View view_from_layers(const Shape& base, const std::vector<ViewLayer>& layers);

}  // namespace lumen::dist
