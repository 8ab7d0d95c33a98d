#include "lumen/kernel/restricted_loops.h"

#include "lumen/core/simplify.h"

namespace lumen::kernel {

AxisRange reduction_range(KnownRegions& known, const Graph& graph, NodeId n, const std::vector<Expr>& coords,
                          const std::vector<LoopVar>& lanes, const std::vector<LoopVar>& varying,
                          const Expr& target_live, bool cut) {
  AxisRange range;
  const Expr& extent = graph.node(n).inputs[0].view.shape()[static_cast<size_t>(graph.node(n).axis)];
  bool short_axis = extent.is_const() && extent.value() <= kShortestRestricted;
  if (!cut && !short_axis) {
    if (auto live = reduction_live_range(known, graph, n, coords, lanes)) {
      range.lo = live->lo;
      range.hi = live->hi;
    }
  }
  range.needed = for_some(target_live.defined() ? target_live : Expr(1), varying);
  return range;
}

Expr for_some(Expr live, const std::vector<LoopVar>& vars) {
  for (const LoopVar& v : vars) live = exists(live, v.var, v.extent);
  return live;
}

std::optional<VarRange> output_range(KnownRegions& known, NodeId target, const Shape& shape, std::vector<Expr> coords,
                                     size_t d, const std::vector<LoopVar>& lanes) {
  Expr probe = Expr::index("known_r", shape[d]);
  coords[d] = probe;
  Known k = region_of(known.at(target, coords));
  if (k.exact.defined() || k.live.is_const(1)) return std::nullopt;
  return live_range(as_predicate(k.live), probe, shape[d], lanes);
}

Expr first_block(const AxisRange& range, int64_t u) { return range.lo.defined() ? simplify(range.lo / u) : Expr(0); }

Expr block_count(const AxisRange& range, int64_t u, const Expr& full) {
  Expr count = range.lo.defined() ? simplify(max((range.hi + (u - 1)) / u - first_block(range, u), Expr(0))) : full;
  return range.needed.is_const(1) ? count : simplify(select(range.needed, count, Expr(0)));
}

}  // namespace lumen::kernel
