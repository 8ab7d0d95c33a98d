#include "lumen/core/rewrite.h"

#include "lumen/core/error.h"

namespace lumen::rewrite {

namespace {

Pattern op(ExprKind kind, std::vector<Pattern> operands) {
  auto n = std::make_shared<PatternNode>();
  n->role = Role::Op;
  n->kind = kind;
  n->operands = std::move(operands);
  return Pattern(std::move(n));
}

bool commutative(ExprKind kind) {
  return kind == ExprKind::Add || kind == ExprKind::Mul || kind == ExprKind::Min || kind == ExprKind::Max ||
         kind == ExprKind::Eq || kind == ExprKind::And || kind == ExprKind::Or;
}

Expr operand(const Expr& e, size_t i) { return i == 0 ? e.a() : i == 1 ? e.b() : e.c(); }

bool match_operands(const PatternNode& p, const Expr& e, Match& m, bool swapped) {
  Match trial = m;
  for (size_t i = 0; i < p.operands.size(); ++i) {
    size_t j = swapped ? 1 - i : i;
    if (!match(p.operands[i], operand(e, j), trial)) return false;
  }
  m = trial;
  return true;
}

}  // namespace

Pattern::Pattern(int64_t literal) {
  auto n = std::make_shared<PatternNode>();
  n->role = Role::Literal;
  n->literal = literal;
  node_ = std::move(n);
}

Pattern wild(int slot) {
  auto n = std::make_shared<PatternNode>();
  n->role = Role::Wild;
  n->slot = slot;
  return Pattern(std::move(n));
}

Pattern const_wild(int slot) {
  auto n = std::make_shared<PatternNode>();
  n->role = Role::ConstWild;
  n->slot = slot;
  return Pattern(std::move(n));
}

Pattern operator+(Pattern a, Pattern b) { return op(ExprKind::Add, {a, b}); }
Pattern operator-(Pattern a) { return op(ExprKind::Mul, {a, Pattern(-1)}); }
Pattern operator-(Pattern a, Pattern b) { return a + (-b); }
Pattern operator*(Pattern a, Pattern b) { return op(ExprKind::Mul, {a, b}); }
Pattern operator/(Pattern a, Pattern b) { return op(ExprKind::Div, {a, b}); }
Pattern operator%(Pattern a, Pattern b) { return op(ExprKind::Mod, {a, b}); }
Pattern min(Pattern a, Pattern b) { return op(ExprKind::Min, {a, b}); }
Pattern max(Pattern a, Pattern b) { return op(ExprKind::Max, {a, b}); }
Pattern operator<(Pattern a, Pattern b) { return op(ExprKind::Lt, {a, b}); }
Pattern operator<=(Pattern a, Pattern b) { return op(ExprKind::Lt, {a, b + Pattern(1)}); }
Pattern operator>(Pattern a, Pattern b) { return op(ExprKind::Lt, {b, a}); }
Pattern operator>=(Pattern a, Pattern b) { return op(ExprKind::Lt, {b, a + Pattern(1)}); }
Pattern eq(Pattern a, Pattern b) { return op(ExprKind::Eq, {a, b}); }
Pattern operator&&(Pattern a, Pattern b) { return op(ExprKind::And, {a, b}); }
Pattern operator||(Pattern a, Pattern b) { return op(ExprKind::Or, {a, b}); }
Pattern operator!(Pattern a) { return op(ExprKind::Not, {a}); }
Pattern select(Pattern c, Pattern a, Pattern b) { return op(ExprKind::Select, {c, a, b}); }

bool match(const Pattern& pattern, const Expr& e, Match& m) {
  const PatternNode& p = *pattern;
  switch (p.role) {
    case Role::Literal: return e.is_const(p.literal);
    case Role::ConstWild:
      if (!e.is_const()) return false;
      [[fallthrough]];
    case Role::Wild: {
      Expr& slot = m.slots.at(static_cast<size_t>(p.slot));
      if (slot.defined()) return slot == e;
      slot = e;
      return true;
    }
    case Role::Op:
      if (e.kind() != p.kind) return false;
      if (match_operands(p, e, m, false)) return true;
      return commutative(p.kind) && match_operands(p, e, m, true);
  }
  return false;
}

Expr instantiate(const Pattern& pattern, const Match& m) {
  const PatternNode& p = *pattern;
  switch (p.role) {
    case Role::Literal: return Expr(p.literal);
    case Role::Wild:
    case Role::ConstWild: {
      const Expr& slot = m.slots.at(static_cast<size_t>(p.slot));
      if (!slot.defined()) fail("rewrite: rule uses slot ", p.slot, " that its pattern never binds");
      return slot;
    }
    case Role::Op: {
      std::vector<Expr> args;
      for (const Pattern& o : p.operands) args.push_back(instantiate(o, m));
      if (p.kind == ExprKind::Not) return make_not(args[0]);
      if (p.kind == ExprKind::Select) return make_select(args[0], args[1], args[2]);
      return make_binary(p.kind, args[0], args[1]);
    }
  }
  return Expr();
}

std::optional<Expr> apply_first(const std::vector<Rule>& rules, const Expr& e, const Prover& prove) {
  for (const Rule& r : rules) {
    Match m;
    if (!match(r.lhs, e, m)) continue;
    try {
      if (r.condition.defined() && !prove(instantiate(r.condition, m))) continue;
      Expr result = instantiate(r.rhs, m);
      if (result != e) return result;
    } catch (const Error&) {
      continue;  // e.g. a constant fold that would overflow: the rule does not apply
    }
  }
  return std::nullopt;
}

}  // namespace lumen::rewrite
