// Affine predicates over loop variables, as lowering meets them when a
// reduction's term or a kernel's output is known outside a predicate
// (known_region.h): the range of one variable the predicate allows, and the
// predicate with lane variables eliminated (a reduction shared by the lanes
// of an unrolled or SIMD loop runs where any lane needs it).
#pragma once

#include <optional>
#include <vector>

#include "lumen/core/expr.h"

namespace lumen::kernel {

// Bounds every point satisfying a predicate has: lo <= var < hi. An
// undefined bound is no bound.
struct VarRange {
  Expr lo, hi;
};
VarRange range_of(const Expr& predicate, const Expr& var);

// A predicate implied by "predicate holds for some var in [0, extent)": equal
// to it for affine comparisons, weaker (up to true) for others.
Expr exists(const Expr& predicate, const Expr& var, const Expr& extent);

// How `e` changes as `var` grows: 1 never decreases, -1 never increases, 0
// independent of it, nothing when unknown.
std::optional<int> monotonicity(const Expr& e, const Expr& var);

// The largest / smallest value of `e` over var in [0, extent), when e is
// monotone in var.
std::optional<Expr> sup_over(const Expr& e, const Expr& var, const Expr& extent);
std::optional<Expr> inf_over(const Expr& e, const Expr& var, const Expr& extent);

struct LoopVar {
  Expr var, extent;
};

// The reduction index range [lo, hi) outside which a term known to be the
// reduction's identity outside `live` is the identity for every lane in
// `lanes`; nothing when `live` bounds `r` on neither side. Clamped to [0, extent).
std::optional<VarRange> live_range(const Expr& live, const Expr& r, const Expr& extent, const std::vector<LoopVar>& lanes);

}  // namespace lumen::kernel
