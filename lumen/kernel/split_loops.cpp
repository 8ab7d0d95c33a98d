#include "lumen/kernel/split_loops.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "lumen/core/expr_eval.h"
#include "lumen/core/linear_form.h"
#include "lumen/core/simplify.h"
#include "lumen/kernel/affine_range.h"

namespace lumen::kernel {

namespace {

constexpr int kMaxSplits = 4;  // per kernel: each split copies a loop's body once

bool mentions_any(const Expr& e, const std::vector<Expr>& vars) {
  if (!e.defined()) return false;
  std::vector<Expr> used = expr_vars(e);
  return std::any_of(used.begin(), used.end(), [&](const Expr& u) { return std::find(vars.begin(), vars.end(), u) != vars.end(); });
}

// The conditions a block decides on: load masks, selects on index values, binds' guards.
void collect_conditions(const Block& block, std::vector<Expr>& conditions, std::vector<Expr>& inner_vars,
                        std::vector<Expr>* inner_extents = nullptr) {
  std::function<void(const Value&)> value = [&](const Value& v) {
    if (v->kind == ValueKind::Load && v->valid.defined() && !v->valid.is_const(1)) conditions.push_back(v->valid);
    if (v->kind == ValueKind::Select && v->args[0]->kind == ValueKind::Index) conditions.push_back(v->args[0]->index);
    for (const Value& a : v->args) value(a);
  };
  for (const Stmt& s : block) {
    if (s.value) value(s.value);
    if (s.kind == StmtKind::Bind && s.guard.defined()) conditions.push_back(s.guard);
    if (s.kind == StmtKind::Loop) {
      inner_vars.push_back(s.var);
      if (inner_extents) inner_extents->push_back(s.extent);
      collect_conditions(s.body, conditions, inner_vars, inner_extents);
    }
  }
}

// Where `condition` (or a conjunct of it) changes along v: S with the
// condition v < S, or v >= S, decided on each side. R must be free of v and of
// the loops inside — except for `c·v + u + R < 0` (c > 0) with u a loop inside
// of constant extent E, a masked SIMD tail's `r_o·16 + r_v < extent`: below
// S = ceil(-(R + E - 1) / c) it holds for every u (whole vectors, no mask);
// from S on it stays a condition (the tail).
std::optional<Expr> split_point(const Expr& condition, const Expr& v, const std::vector<Expr>& inner_vars,
                                const std::vector<Expr>& inner_extents) {
  if (condition.kind() == ExprKind::And || condition.kind() == ExprKind::Or) {
    if (auto s = split_point(condition.a(), v, inner_vars, inner_extents)) return s;
    return split_point(condition.b(), v, inner_vars, inner_extents);
  }
  if (condition.kind() == ExprKind::Not) return split_point(condition.a(), v, inner_vars, inner_extents);
  if (condition.kind() != ExprKind::Lt) return std::nullopt;
  auto d = LinearForm::of(condition.a() - condition.b());  // the condition is d < 0
  if (!d) return std::nullopt;
  int64_t coefficient = 0;
  LinearForm rest;
  rest.constant = d->constant;
  for (const auto& [term, c] : d->terms) {
    if (term == v) {
      coefficient = c;
    } else {
      rest.add(term, c);
    }
  }
  Expr r = rest.to_expr();
  if (coefficient > 0 && mentions_any(r, inner_vars) && inner_extents.size() == inner_vars.size()) {
    Expr r_max = r;  // R at its largest over the loops inside (affine_range.h)
    for (size_t i = 0; i < inner_vars.size(); ++i) {
      if (!mentions_any(r_max, {inner_vars[i]})) continue;
      if (!inner_extents[i].is_const() || inner_extents[i].value() < 1) return std::nullopt;
      std::optional<Expr> sup = sup_over(r_max, inner_vars[i], inner_extents[i]);
      if (!sup) return std::nullopt;
      r_max = *sup;
    }
    if (mentions_any(r_max, {v}) || mentions_any(r_max, inner_vars)) return std::nullopt;
    // c·v + R_max < 0  <=>  v < ceil(-R_max / c) = floor((c - 1 - R_max) / c); S >= 0 where it matters (clamped by the caller)
    return simplify(max((Expr(coefficient - 1) - r_max) / coefficient, Expr(0)));
  }
  if ((coefficient != 1 && coefficient != -1) || mentions_any(r, {v}) || mentions_any(r, inner_vars)) return std::nullopt;
  return simplify(coefficient == 1 ? Expr(0) - r : r + 1);  // v < -R, or v > R
}

// How many of the conditions are still undecided in `block`.
int undecided(const Block& block) {
  std::vector<Expr> conditions, inner;
  collect_conditions(block, conditions, inner);
  return static_cast<int>(std::count_if(conditions.begin(), conditions.end(), [](const Expr& c) { return !c.is_const(); }));
}

class Splitter {
 public:
  int run(Block& block) {
    for (size_t i = 0; i < block.size() && splits_ < kMaxSplits; ++i) {
      Stmt& s = block[i];
      if (s.kind != StmtKind::Loop) continue;
      if (s.loop == LoopKind::Serial) {
        if (auto pieces = split(s)) {
          block.erase(block.begin() + static_cast<long>(i));
          block.insert(block.begin() + static_cast<long>(i), pieces->begin(), pieces->end());
          --i;  // the pieces may split again (another condition)
          continue;
        }
      }
      bool lane = s.loop == LoopKind::Vector || s.loop == LoopKind::Unroll;
      if (lane) lanes_.push_back(s.var);
      run(s.body);
      if (lane) lanes_.pop_back();
    }
    return splits_;
  }

 private:
  std::optional<Block> split(const Stmt& loop) {
    std::vector<Expr> conditions, inner_vars, inner_extents;
    collect_conditions(loop.body, conditions, inner_vars, &inner_extents);
    const int before = undecided(loop.body);
    for (const Expr& condition : conditions) {
      std::optional<Expr> point = split_point(simplify(condition), loop.var, inner_vars, inner_extents);
      // A point that moves with an enclosing lane would give each lane its own trip count: the
      // lanes could no longer run as one vector (a window sum's padding, read per output lane).
      if (!point || mentions_any(*point, lanes_)) continue;
      Expr at = simplify(max(min(*point, loop.extent), Expr(0)));
      if (at.is_const(0) || at == loop.extent) continue;  // decided over the whole loop already
      ++count_;
      Expr lo = Expr::index(loop.var.name() + "_lo" + std::to_string(count_), at);
      Expr hi_extent = simplify(loop.extent - at);
      Expr hi = Expr::index(loop.var.name() + "_hi" + std::to_string(count_), hi_extent);
      Block first = substituted(loop.body, VarMap{{loop.var, lo}});
      Block second = substituted(loop.body, VarMap{{loop.var, simplify(hi + at)}});
      if (undecided(first) >= before && undecided(second) >= before) continue;  // the simplifier cannot tell
      ++splits_;
      Block out;
      out.push_back(Stmt::make_loop(lo, at, LoopKind::Serial, std::move(first)));
      out.push_back(Stmt::make_loop(hi, hi_extent, LoopKind::Serial, std::move(second)));
      for (Stmt& piece : out) piece.unroll_hint = loop.unroll_hint;
      return out;
    }
    return std::nullopt;
  }

  int splits_ = 0;
  int count_ = 0;
  std::vector<Expr> lanes_;  // variables of the enclosing vector and unrolled loops
};

}  // namespace

int split_loops_at_conditions(Kernel& kernel) { return Splitter().run(kernel.body); }

}  // namespace lumen::kernel
