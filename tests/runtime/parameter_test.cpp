// Parameters (weights): packed panels derived from them are kept between
// runs and redone when the parameter is set again.
#include <gtest/gtest.h>

#include <cmath>

#include "lumen/compile.h"
#include "lumen/core/tensor.h"

namespace lumen {
namespace {

Array random_matrix(int64_t rows, int64_t cols, int seed) {
  Array a(DType::F32, {rows, cols});
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, std::sin(static_cast<double>(i * 13 + seed)));
  return a;
}

// y = x @ w^T (a linear layer): w is read transposed, so the heuristic packs it.
TEST(Parameter, PackedWeightsAreKeptAndRedoneWhenSetAgain) {
  Graph g;
  const int64_t m = 64, n = 128, k = 96;
  Tensor x = g.input("x", {Expr(m), Expr(k)});
  Tensor w = g.parameter("w", {Expr(n), Expr(k)});
  g.mark_output(x.matmul(w.transpose(0, 1)), "y");
  CompileOptions o;
  o.tuning_cache = false;
  Program p = compile(g, {}, o);
  ASSERT_GT(p.stats()["kept_pack_bytes"], 0) << "the heuristic no longer packs this operand; pick other sizes";
  Array xa = random_matrix(m, k, 1);
  p.set("x", xa);
  auto check = [&](const Array& wa) {
    p.run();
    const Array& y = p.get("y");
    for (int64_t i = 0; i < m; i += 7) {
      for (int64_t j = 0; j < n; j += 5) {
        double want = 0;
        for (int64_t r = 0; r < k; ++r) want += xa.get(i * k + r) * wa.get(j * k + r);
        ASSERT_NEAR(y.get(i * n + j), want, 1e-3) << i << "," << j;
      }
    }
  };
  Array w1 = random_matrix(n, k, 2), w2 = random_matrix(n, k, 3);
  p.set("w", w1);
  check(w1);
  check(w1);  // the kept panels
  p.set("w", w2);
  check(w2);  // redone after set()
  p.set("x", random_matrix(m, k, 4));  // setting another input keeps the panels
  xa = random_matrix(m, k, 4);
  check(w2);
}

TEST(Parameter, IsAnInputSetByName) {
  Graph g;
  Tensor w = g.parameter("w", {Expr(3)});
  EXPECT_TRUE(g.node(w.node_id()).parameter);
  EXPECT_EQ(g.find_input("w"), w.node_id());
  EXPECT_THROW(g.parameter("w", {Expr(3)}), Error);  // names are unique
}

}  // namespace
}  // namespace lumen
