// A small pattern language for rewrite rules on Exprs, so simplifier rules
// read as math:
//
//   rule((x / c0) / c1, x / (c0 * c1), c0 > 0 && c1 > 0)
//
// `x`, `y`, `z` match any expression, `c0`, `c1`, `c2` only constants; a
// name used twice must match the same expression. The right-hand side is
// built with the Expr factories, so constant parts such as `c0 * c1` fold.
// A rule fires when its optional condition, instantiated with the match, is
// proven by the caller's prover. Commutative operators match both orders.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "lumen/core/expr.h"

namespace lumen::rewrite {

struct PatternNode;

class Pattern {
 public:
  Pattern() = default;
  Pattern(int64_t literal);  // NOLINT: literals read naturally in rules
  Pattern(int literal) : Pattern(static_cast<int64_t>(literal)) {}  // NOLINT
  explicit Pattern(std::shared_ptr<const PatternNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const PatternNode& operator*() const { return *node_; }
  const PatternNode* operator->() const { return node_.get(); }

 private:
  std::shared_ptr<const PatternNode> node_;
};

enum class Role : uint8_t { Wild, ConstWild, Literal, Op };

struct PatternNode {
  Role role;
  int slot = 0;         // Wild, ConstWild
  int64_t literal = 0;  // Literal
  ExprKind kind{};      // Op
  std::vector<Pattern> operands;
};

inline constexpr int kSlots = 6;

struct Match {
  std::array<Expr, kSlots> slots;
};

Pattern wild(int slot);        // any expression
Pattern const_wild(int slot);  // a constant only (shares slot numbers with wild)

Pattern operator+(Pattern a, Pattern b);
Pattern operator-(Pattern a, Pattern b);
Pattern operator-(Pattern a);
Pattern operator*(Pattern a, Pattern b);
Pattern operator/(Pattern a, Pattern b);
Pattern operator%(Pattern a, Pattern b);
Pattern min(Pattern a, Pattern b);
Pattern max(Pattern a, Pattern b);
Pattern operator<(Pattern a, Pattern b);
Pattern operator<=(Pattern a, Pattern b);
Pattern operator>(Pattern a, Pattern b);
Pattern operator>=(Pattern a, Pattern b);
Pattern eq(Pattern a, Pattern b);
Pattern operator&&(Pattern a, Pattern b);
Pattern operator||(Pattern a, Pattern b);
Pattern operator!(Pattern a);
Pattern select(Pattern c, Pattern a, Pattern b);

bool match(const Pattern& pattern, const Expr& e, Match& m);
Expr instantiate(const Pattern& pattern, const Match& m);

struct Rule {
  Pattern lhs, rhs, condition;
};

inline Rule rule(Pattern lhs, Pattern rhs, Pattern condition = Pattern()) {
  return Rule{std::move(lhs), std::move(rhs), std::move(condition)};
}

using Prover = std::function<bool(const Expr&)>;

// The result of the first rule that matches `e` and whose condition `prove`
// accepts, or nothing.
std::optional<Expr> apply_first(const std::vector<Rule>& rules, const Expr& e, const Prover& prove);

}  // namespace lumen::rewrite
