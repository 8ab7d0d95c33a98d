// Known regions: for a graph node at symbolic coordinates, where its value is
// known without running anything. Two kinds of knowledge:
//
//  - `exact`: the value is an integer Expr of the coordinates everywhere
//    (iotas, arange, comparisons of them, bool masks built from them, and
//    float casts of small integers). Comparisons become predicates.
//  - `live` / `value`: outside the predicate `live`, the value is the
//    constant `value`. Sources: padding (0 outside the valid region), a
//    select (where) with a constant branch, log2 of a 0/1 mask (-inf where
//    the mask is 0, as ops::neg_inf_where builds), and the rules
//    exp2(-inf) = 0, x + (±inf) = ±inf, x·0 = 0, max with -inf.
//
// Exactness: selects, padding, unary functions of a constant and sums or
// products of two constants are exact. The rules x + (±inf) = ±inf and
// x·0 = 0 hold when the other operand x is finite; the analysis assumes
// values it knows nothing about (inputs, reductions) are finite there, as
// fused attention kernels do (masked terms contribute nothing). Where an
// input holds inf or NaN at a position the predicate excludes, a kernel
// using the region computes what such kernels compute rather than the NaN
// IEEE arithmetic would give.
//
// Lowering uses it (affine_range.h) to run a reduction only over the points
// where its term can differ from the reduction's identity, and to skip work
// at the output points of a kernel where its value is known. The analysis
// reads the graph, so a consumer kernel knows the region of a materialised
// producer as well as of its inlined nodes.
#pragma once

#include <map>
#include <vector>

#include "lumen/core/graph.h"
#include "lumen/kernel/affine_range.h"

namespace lumen::kernel {

struct Known {
  Expr exact;           // defined: the value is this Expr (bools 0/1) at every point
  Expr live = Expr(1);  // outside this predicate the value is `value`
  double value = 0;

  bool knows_something() const { return exact.defined() || !live.is_const(1); }
};

class KnownRegions {
 public:
  explicit KnownRegions(const Graph& graph) : graph_(graph) {}

  // Node `n` at `coords` (one Expr per dim of its shape).
  Known at(NodeId n, const std::vector<Expr>& coords);
  // What an edge reads at `coords` of its view's shape.
  Known through(const Edge& e, const std::vector<Expr>& coords);

 private:
  Known compute(NodeId n, const std::vector<Expr>& coords);
  Known gather(const Node& node, const std::vector<Expr>& coords);

  const Graph& graph_;
  std::map<std::pair<NodeId, std::vector<const ExprNode*>>, Known> memo_;
};

// The coordinates of flat position `flat` in a contiguous buffer of `shape`.
std::vector<Expr> unflatten(const Expr& flat, const Shape& shape);

// A predicate over 0/1-valued integer Exprs in plain boolean form:
// `1 - b` becomes not(b), `b < 1` not(b), `0 < b` and `b == 1` b, ...
Expr as_predicate(const Expr& e);

// Outside `live` the value is `value` (also for exact knowledge: 0 outside e != 0).
Known region_of(const Known& k);

// `cond ? t : f` for the knowledge of both branches.
Known select_known(const Expr& cond, const Known& t, const Known& f);

// Where the term of reduction `node` at output `coords` can differ from the
// reduction's identity (0 for a sum, -inf for a max): a range of its axis for
// all `lanes` together, or nothing when the whole axis may.
std::optional<VarRange> reduction_live_range(KnownRegions& known, const Graph& graph, NodeId node,
                                             const std::vector<Expr>& coords, const std::vector<LoopVar>& lanes);

}  // namespace lumen::kernel
