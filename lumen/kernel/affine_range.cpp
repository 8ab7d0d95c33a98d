#include "lumen/kernel/affine_range.h"

#include <algorithm>
#include <unordered_map>

#include "lumen/core/expr_eval.h"
#include "lumen/core/linear_form.h"
#include "lumen/core/simplify.h"

namespace lumen::kernel {

namespace {

bool mentions(const Expr& e, const Expr& var) {
  std::vector<Expr> vars = expr_vars(e);
  return std::find(vars.begin(), vars.end(), var) != vars.end();
}

// `e` as c·var + rest with rest free of var; nothing when var appears otherwise.
std::optional<std::pair<int64_t, Expr>> split_linear(const Expr& e, const Expr& var) {
  auto form = LinearForm::of(simplify(e));
  if (!form) return std::nullopt;
  int64_t c = 0;
  LinearForm rest;
  rest.constant = form->constant;
  for (const auto& [term, coefficient] : form->terms) {
    if (term == var) {
      c = coefficient;
    } else if (mentions(term, var)) {
      return std::nullopt;
    } else {
      rest.terms.emplace_back(term, coefficient);
    }
  }
  return std::make_pair(c, rest.to_expr());
}

Expr max_of(const Expr& a, const Expr& b) {
  if (!a.defined()) return a;
  if (!b.defined()) return b;
  return simplify(max(a, b));
}

Expr min_of(const Expr& a, const Expr& b) {
  if (!a.defined()) return a;
  if (!b.defined()) return b;
  return simplify(min(a, b));
}

// Pushes a negation into comparisons: not(a < b) is b < a + 1.
Expr negated(const Expr& p) {
  switch (p.kind()) {
    case ExprKind::Not: return p.a();
    case ExprKind::And: return logical_or(negated(p.a()), negated(p.b()));
    case ExprKind::Or: return logical_and(negated(p.a()), negated(p.b()));
    case ExprKind::Lt: return lt(p.b(), p.a() + 1);
    case ExprKind::Const: return Expr(p.value() ? 0 : 1);
    default: return logical_not(p);
  }
}

}  // namespace

VarRange range_of(const Expr& p, const Expr& var) {
  if (!mentions(p, var)) return p.is_const(0) ? VarRange{Expr(0), Expr(0)} : VarRange{};
  switch (p.kind()) {
    case ExprKind::And: {
      VarRange a = range_of(p.a(), var), b = range_of(p.b(), var);
      return {a.lo.defined() ? (b.lo.defined() ? max_of(a.lo, b.lo) : a.lo) : b.lo,
              a.hi.defined() ? (b.hi.defined() ? min_of(a.hi, b.hi) : a.hi) : b.hi};
    }
    case ExprKind::Or: {
      VarRange a = range_of(p.a(), var), b = range_of(p.b(), var);
      return {min_of(a.lo, b.lo), max_of(a.hi, b.hi)};
    }
    case ExprKind::Not: {
      Expr inner = p.a();
      if (inner.kind() == ExprKind::Eq) return {};
      return range_of(negated(inner), var);
    }
    case ExprKind::Lt: {  // c·var + rest < 0
      auto split = split_linear(p.a() - p.b(), var);
      if (!split || split->first == 0) return {};
      auto [c, rest] = *split;
      if (c > 0) return {Expr(), simplify((Expr(-1) - rest) / c + 1)};
      return {simplify((rest + (-c)) / (-c)), Expr()};
    }
    case ExprKind::Eq: {  // c·var + rest == 0
      auto split = split_linear(p.a() - p.b(), var);
      if (!split || (split->first != 1 && split->first != -1)) return {};
      Expr at = simplify(split->first == 1 ? -split->second : split->second);
      return {at, simplify(at + 1)};
    }
    default: return {};
  }
}

std::optional<int> monotonicity(const Expr& e, const Expr& var) {
  if (!mentions(e, var)) return 0;
  auto combine = [](std::optional<int> a, std::optional<int> b) -> std::optional<int> {
    if (!a || !b) return std::nullopt;
    if (*a == 0) return b;
    if (*b == 0 || *a == *b) return a;
    return std::nullopt;
  };
  switch (e.kind()) {
    case ExprKind::Var: return 1;
    case ExprKind::Add:
    case ExprKind::Min:
    case ExprKind::Max: return combine(monotonicity(e.a(), var), monotonicity(e.b(), var));
    case ExprKind::Mul:
      for (int side = 0; side < 2; ++side) {
        Expr k = side ? e.a() : e.b(), x = side ? e.b() : e.a();
        if (!k.is_const()) continue;
        auto m = monotonicity(x, var);
        if (!m) return std::nullopt;
        return k.value() == 0 ? 0 : k.value() > 0 ? *m : -*m;
      }
      return std::nullopt;
    case ExprKind::Div:
      if (e.b().is_const() && e.b().value() > 0) return monotonicity(e.a(), var);
      return std::nullopt;
    default: return std::nullopt;
  }
}

namespace {

std::optional<Expr> extreme(const Expr& e, const Expr& var, const Expr& extent, int direction) {
  auto m = monotonicity(e, var);
  if (!m) return std::nullopt;
  if (*m == 0) return e;
  Expr at = *m == direction ? simplify(extent - 1) : Expr(0);
  std::unordered_map<Expr, Expr, ExprHash> with{{var, at}};
  return simplify(substitute(e, with));
}

}  // namespace

std::optional<Expr> sup_over(const Expr& e, const Expr& var, const Expr& extent) { return extreme(e, var, extent, 1); }
std::optional<Expr> inf_over(const Expr& e, const Expr& var, const Expr& extent) { return extreme(e, var, extent, -1); }

Expr exists(const Expr& p, const Expr& var, const Expr& extent) {
  if (!mentions(p, var)) return p;
  switch (p.kind()) {
    case ExprKind::And: return simplify(logical_and(exists(p.a(), var, extent), exists(p.b(), var, extent)));
    case ExprKind::Or: return simplify(logical_or(exists(p.a(), var, extent), exists(p.b(), var, extent)));
    case ExprKind::Not:
      if (p.a().kind() == ExprKind::Eq) return Expr(1);
      return exists(negated(p.a()), var, extent);
    case ExprKind::Lt: {  // some var makes a - b negative: its smallest value is
      auto low = inf_over(simplify(p.a() - p.b()), var, extent);
      return low ? simplify(lt(*low, Expr(0))) : Expr(1);
    }
    default: return Expr(1);
  }
}

std::optional<VarRange> live_range(const Expr& live, const Expr& r, const Expr& extent, const std::vector<LoopVar>& lanes) {
  VarRange range = range_of(live, r);
  if (!range.lo.defined() && !range.hi.defined()) return std::nullopt;
  Expr lo = range.lo.defined() ? range.lo : Expr(0), hi = range.hi.defined() ? range.hi : extent;
  for (const LoopVar& lane : lanes) {  // every lane's range, together
    auto l = inf_over(lo, lane.var, lane.extent);
    auto h = sup_over(hi, lane.var, lane.extent);
    if (!l || !h) return std::nullopt;
    lo = *l;
    hi = *h;
  }
  lo = simplify(max(lo, Expr(0)));
  hi = simplify(max(min(hi, extent), lo));
  return VarRange{lo, hi};
}

}  // namespace lumen::kernel
