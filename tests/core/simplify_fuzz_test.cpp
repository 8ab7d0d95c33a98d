// Fuzz test for the simplifier: thousands of random expressions, each
// simplified, both evaluated at random bindings inside the variables' bounds.
// They must agree, and every value must lie inside the node's computed bounds.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "lumen/core/error.h"
#include "lumen/core/expr.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/simplify.h"

namespace lumen {
namespace {

struct Fuzzer {
  std::mt19937_64 rng{12345};
  std::vector<Expr> vars = {Expr::var("x", 0, 15), Expr::var("y", -8, 8), Expr::var("z", 1, 40),
                            Expr::var("w", 0, 3)};

  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

  Expr leaf() {
    if (uniform(0, 2) == 0) return Expr(uniform(-10, 10));
    return vars[static_cast<size_t>(uniform(0, static_cast<int64_t>(vars.size()) - 1))];
  }

  // A random expression; a construction that is rejected (a literal zero
  // divisor) yields its left operand instead.
  Expr random_expr(int depth) {
    try {
      return random_node(depth);
    } catch (const Error&) {
      return leaf();
    }
  }

  Expr random_node(int depth) {
    if (depth == 0 || uniform(0, 5) == 0) return leaf();
    Expr a = random_expr(depth - 1);
    Expr b = random_expr(depth - 1);
    switch (uniform(0, 13)) {
      case 0:
      case 1: return a + b;
      case 2: return a - b;
      case 3: return a * (uniform(0, 1) ? b : Expr(uniform(-6, 6)));
      case 4: return a / Expr(uniform(1, 9) * (uniform(0, 4) == 0 ? -1 : 1));
      case 5: return a % Expr(uniform(1, 9) * (uniform(0, 4) == 0 ? -1 : 1));
      case 6: return a / b;
      case 7: return a % b;
      case 8: return min(a, b);
      case 9: return max(a, b);
      case 10: return lt(a, b);
      case 11: return eq(a, b);
      case 12: return uniform(0, 1) ? logical_and(lt(a, b), lt(b, Expr(3))) : logical_or(a, logical_not(b));
      default: return select(lt(a, b), a, b + 1);
    }
  }

  Bindings random_binding() {
    Bindings b;
    for (const Expr& v : vars) b[v.name()] = uniform(v.lo(), v.hi());
    return b;
  }
};

// Every subexpression's value lies in its bounds.
void check_bounds(const Expr& e, const Bindings& b) {
  std::function<void(const Expr&)> walk = [&](const Expr& x) {
    if (!x.defined() || x.kind() == ExprKind::Var) return;
    int64_t v;
    try {
      v = evaluate(x, b);
    } catch (const Error&) {
      return;
    }
    ASSERT_LE(x.lo(), v) << to_string(x) << " at value " << v;
    ASSERT_GE(x.hi(), v) << to_string(x) << " at value " << v;
    if (x.kind() == ExprKind::Select) {  // only the taken branch is meaningful
      walk(x.a());
      walk(evaluate(x.a(), b) != 0 ? x.b() : x.c());
      return;
    }
    walk(x.a());
    walk(x.b());
  };
  walk(e);
}

TEST(SimplifyFuzz, SimplifiedEqualsOriginalEverywhere) {
  Fuzzer f;
  int compared = 0, shrunk = 0;
  for (int n = 0; n < 6000; ++n) {
    Expr e = f.random_expr(4);
    Expr s = simplify(e);
    if (expr_tree_size(s) < expr_tree_size(e)) ++shrunk;
    for (int k = 0; k < 12; ++k) {
      Bindings b = f.random_binding();
      int64_t want;
      try {
        want = evaluate(e, b);
      } catch (const Error&) {
        continue;  // division by zero in the original: nothing to compare
      }
      int64_t got = 0;
      ASSERT_NO_THROW(got = evaluate(s, b)) << to_string(e) << "  =>  " << to_string(s);
      ASSERT_EQ(want, got) << to_string(e) << "  =>  " << to_string(s);
      check_bounds(e, b);
      check_bounds(s, b);
      ++compared;
    }
  }
  EXPECT_GT(compared, 40000);
  EXPECT_GT(shrunk, 1000);  // the simplifier does real work on random input
}

TEST(SimplifyFuzz, SimplifyIsIdempotent) {
  Fuzzer f;
  for (int n = 0; n < 2000; ++n) {
    Expr s = simplify(f.random_expr(4));
    ASSERT_EQ(simplify(s), s) << to_string(s);
  }
}

}  // namespace
}  // namespace lumen
