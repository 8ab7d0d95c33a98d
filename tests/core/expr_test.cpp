// Tests for lumen/core/expr.h, expr_eval.h and simplify.h on hand-picked cases.
#include <gtest/gtest.h>

#include "lumen/core/error.h"
#include "lumen/core/expr.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/simplify.h"

namespace lumen {
namespace {

TEST(Expr, HashConsingMakesEqualStructuresIdentical) {
  Expr x = Expr::var("x", 0, 10);
  Expr a = x * 4 + 3;
  Expr b = x * 4 + 3;
  EXPECT_EQ(a.get(), b.get());
  EXPECT_NE((x * 4 + 2).get(), a.get());
  // Same name, different bounds: different variables.
  EXPECT_NE(Expr::var("x", 0, 11), x);
}

TEST(Expr, FloorSemantics) {
  EXPECT_EQ(evaluate(Expr(-7) / Expr(2), {}), -4);
  EXPECT_EQ(evaluate(Expr(-7) % Expr(2), {}), 1);
  EXPECT_EQ(evaluate(Expr(7) % Expr(-2), {}), -1);
  EXPECT_EQ(evaluate(Expr(7) / Expr(-2), {}), -4);
  Expr x = Expr::var("x", -100, 100);
  EXPECT_EQ(evaluate(x / 3, {{"x", -1}}), -1);
  EXPECT_EQ(evaluate(x % 3, {{"x", -1}}), 2);
}

TEST(Expr, EvaluationErrors) {
  Expr x = Expr::var("x", -100, 100);
  EXPECT_THROW(evaluate(x / 3, {}), Error);                                   // unbound
  EXPECT_THROW(evaluate(Expr(5) / x, {{"x", 0}}), Error);                     // division by zero
  EXPECT_THROW(evaluate(x * Expr(int64_t{1} << 62) * 4, {{"x", 7}}), Error);  // overflow
  EXPECT_THROW(Expr(3) / Expr(0), Error);
}

TEST(Expr, BoundsAreComputedWhenBuilt) {
  Expr i = Expr::var("i", 0, 9);
  Expr e = i * 4 + 3;
  EXPECT_EQ(e.lo(), 3);
  EXPECT_EQ(e.hi(), 39);
  EXPECT_EQ((i % 4).hi(), 3);
  EXPECT_EQ((i / 4).hi(), 2);
  EXPECT_EQ(lt(i, Expr(10)).lo(), 1);
}

TEST(Expr, PrintsReadably) {
  Expr i = Expr::var("i", 0, 9), j = Expr::var("j", 0, 9);
  EXPECT_EQ(to_string(simplify(i * 4 + j - 3)), "i*4 + j - 3");
  EXPECT_EQ(to_string(select(lt(i, j), i, j / 2)), "i < j ? i : j/2");
  EXPECT_EQ(to_string(min(i, j) % 3), "min(i, j)%3");
}

TEST(Simplify, CanonicalSums) {
  Expr x = Expr::var("x", 0, 100), y = Expr::var("y", 0, 100);
  EXPECT_EQ(simplify(x + y - x), y);
  EXPECT_EQ(simplify((x + 1) * 3 - x * 3), Expr(3));
  EXPECT_EQ(simplify(x + y), simplify(y + x));
  EXPECT_EQ(simplify((x / 4) * 4 + x % 4), x);
}

// A flat index split into mixed-radix digits and put back together (a reshape
// [K] -> [K/32, 2, 16] -> [K]) is the flat index again, in either term order.
TEST(Simplify, MixedRadixDigitsRecombine) {
  Expr k = Expr::var("k", 0, 575), n = Expr::var("n", 0, 9);
  EXPECT_EQ(simplify((k / 32) * 32 + ((k / 16) % 2) * 16 + k % 16), k);
  EXPECT_EQ(simplify(k % 16 + ((k / 16) % 2) * 16 + (k / 32) * 32), k);
  EXPECT_EQ(simplify(((k / 16) % 2) * 16 + k % 16), simplify(k % 32));
  EXPECT_EQ(simplify((((k / 4) % 3) * 4 + k % 4) * 5 + n), simplify((k % 12) * 5 + n));
  // Digits that do not line up stay as they are, and stay right.
  Expr off = ((k / 16) % 2) * 8 + k % 16;
  for (int64_t v = 0; v < 576; v += 7) EXPECT_EQ(evaluate(simplify(off), {{"k", v}}), (v / 16) % 2 * 8 + v % 16);
}

TEST(Simplify, DivModWithBounds) {
  Expr i = Expr::var("i", 0, 7), j = Expr::var("j", 0, 3);
  EXPECT_EQ(simplify((i * 4 + j) / 4), i);
  EXPECT_EQ(simplify((i * 4 + j) % 4), j);
  EXPECT_EQ(simplify((i * 8 + j * 2) / 2), simplify(i * 4 + j));
  EXPECT_EQ(simplify((i / 2) / 4), simplify(i / 8));
  EXPECT_EQ(simplify(lt(i, Expr(8))), Expr(1));
  EXPECT_EQ(simplify(min(i, Expr(20))), i);
}

// Merged dims read at an offset (a Winograd tile's second row, 64 channels on): the offset's
// multiple of the inner dims' size goes with the outer digits, so the channel index, below
// 64, drops out of the division (it stays a SIMD lane's affine index).
TEST(Simplify, DivisionOfMergedDimsAtAnOffset) {
  Expr a = Expr::var("a", 0, 55), b = Expr::var("b", 0, 27), c = Expr::var("c", 0, 63);
  Expr x = a * 1792 + b * 64 + c + 399616;
  Expr q = simplify(x / 3584);
  EXPECT_EQ(q, simplify((a * 28 + b + 6244) / 56));
  for (int64_t v = 0; v < 56; v += 5) {
    for (int64_t w : {0, 13, 27}) {
      for (int64_t u : {0, 63}) {
        int64_t flat = v * 1792 + w * 64 + u + 399616;
        EXPECT_EQ(evaluate(q, {{"a", v}, {"b", w}, {"c", u}}), flat / 3584);
        EXPECT_EQ(evaluate(simplify(x % 3584), {{"a", v}, {"b", w}, {"c", u}}), flat % 3584);
      }
    }
  }
}

TEST(Simplify, SymbolicDivisorUsesExtent) {
  Expr seq = Expr::symbol("seq");
  Expr i = Expr::index("i", Expr(4)), j = Expr::index("j", seq);
  Expr flat = i * seq + j;
  EXPECT_EQ(simplify(flat / seq), i);
  EXPECT_EQ(simplify(flat % seq), j);
}

// A reshape over a sum of dynamic dims (keys of a KV cache: past + seq rows)
// flattens with a multi-term stride; polynomial division undoes it.
TEST(Simplify, SumDivisorUndoesFlattening) {
  Expr past = Expr::symbol("past"), seq = Expr::symbol("seq");
  Expr rows = past + seq;
  Expr h = Expr::index("h", Expr(4)), t = Expr::index("t", rows), d = Expr::index("d", Expr(16));
  Expr flat = (h * rows + t) * 16 + d;
  EXPECT_EQ(simplify((flat / 16) / rows), h);
  EXPECT_EQ(simplify((flat / 16) % rows), t);
  EXPECT_EQ(simplify(flat / (rows * 16)), h);
  // Heads merged in pairs across a dynamic length: (h·64·T + t·64 + d) / (128·T) = h / 2.
  Expr merged = (h * rows + t) * 64 + Expr::index("e", Expr(64));
  EXPECT_EQ(simplify(merged / (rows * 128)), simplify(h / 2));
  EXPECT_EQ(simplify((merged / (rows * 128)) % 4), simplify(h / 2));
  // Not a multiple: stays a division (and stays correct).
  Expr odd = h * rows + t + past;
  Bindings b{{"past", 3}, {"seq", 2}};
  Expr s = simplify(odd / rows);
  for (int64_t hv = 0; hv < 4; ++hv) {
    for (int64_t tv = 0; tv < 5; ++tv) {
      Bindings at = b;
      at["h"] = hv;
      at["t"] = tv;
      EXPECT_EQ(evaluate(s, at), evaluate(odd / rows, at));
    }
  }
}

TEST(Simplify, ProveIsConservative) {
  Expr x = Expr::var("x", 0, 10);
  EXPECT_TRUE(prove(lt(x, Expr(11))));
  EXPECT_FALSE(prove(lt(x, Expr(10))));
  EXPECT_TRUE(prove(lt(x, x + 1)));
  EXPECT_FALSE(prove(lt(x + 1, x)));
}

}  // namespace
}  // namespace lumen
