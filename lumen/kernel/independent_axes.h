// Independent axes of a group of kernels (see slicing.h): for every node the
// group's kernels compute, which of its dims carries each of the group's
// axes, and how the buffers the group reads from outside move along them.
//
// The group's axes are the dims of its last member's output. They are
// followed from consumers to producers through every edge inside the group:
// the producer coordinates an edge reads (its view's index, unflattened) must
// take the consumer's coordinate along an axis unchanged in exactly one dim
// and nowhere else, or not at all (the producer is the same along the axis: a
// broadcast). Anything else — a reduction over the axis, a shifted or flipped
// read, a fixed position, padding that depends on it — makes the axis
// dependent. A gather is refused, except a two-place one (where(c, a, b),
// two_place_gather.h) whose table is computed in the group: its table is
// followed at both places it reads, which must map the axis alike. A buffer from outside the group may be read any way whose
// flat index moves by the same amount at every point when the axis
// coordinate moves (linear in it, or separable from the other coordinates).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lumen/core/graph.h"

namespace lumen::kernel {

// How the flat index of a buffer read from outside moves when an axis
// coordinate goes from 0 to `axis_origin(a)`: by offsets[a], an Expr of that
// variable alone (the read is separable along the axis: a head index h / 4
// of grouped-query attention qualifies). `linear[a]`: the index is linear in
// the coordinate, so a chunk of several rows may start anywhere.
struct ExternalRead {
  std::vector<Expr> offsets;
  std::vector<bool> linear;
};

// The variable standing for where a chunk starts along axis `a` of extent `extent`.
Expr axis_origin(size_t a, const Expr& extent);

struct GroupAxes {
  Shape extents;                             // per axis (the last member's shape)
  std::vector<bool> independent;             // per axis
  std::vector<NodeId> closure;               // nodes the members compute (members and inlined ones), ascending
  std::map<NodeId, std::vector<int>> dims;   // per closure node: per axis, the dim carrying it (-1: none)
  std::vector<std::vector<NodeId>> member_nodes;  // per member: the closure nodes its kernel computes
  // Per member: each buffer read from outside the group and how its flat
  // index moves along each axis.
  std::vector<std::map<NodeId, ExternalRead>> external;
  std::string why_not;  // set when the group cannot be analysed at all
};

GroupAxes independent_axes(const Graph& graph, const std::vector<bool>& materialized,
                           const std::vector<NodeId>& members);


}  // namespace lumen::kernel
