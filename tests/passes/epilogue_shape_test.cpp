// Tests for lumen/passes/epilogue_shape.h: a scale and a bias applied to a
// projection read as heads are computed in the projection's shape (the
// kernel tiles its rows), the values are bit-identical on the interpreter,
// and reshapes that are no head split are left alone.
#include <gtest/gtest.h>

#include <cmath>

#include "lumen/backend/interp/interpreter.h"
#include "lumen/core/tensor.h"
#include "lumen/ops/linalg.h"
#include "lumen/passes/epilogue_shape.h"

namespace lumen {
namespace {

std::map<std::string, Array> inputs(int64_t rows, int64_t k, int64_t n, bool bias) {
  std::vector<float> xv, wv, bv;
  for (int64_t i = 0; i < rows * k; ++i) xv.push_back(std::sin(0.37f * static_cast<float>(i)));
  for (int64_t i = 0; i < k * n; ++i) wv.push_back(std::cos(0.11f * static_cast<float>(i)) - 0.3f);
  for (int64_t i = 0; i < 16; ++i) bv.push_back(0.25f * static_cast<float>(i) - 1.0f);
  std::map<std::string, Array> in{{"x", Array::from_floats(xv, {rows, k})}, {"w", Array::from_floats(wv, {k, n})}};
  if (bias) in.emplace("b", Array::from_floats(bv, {16}));
  return in;
}

void expect_same_values(const Graph& before, const std::vector<Edge>& want_edges, const Graph& after,
                        const std::vector<Edge>& got_edges, const std::map<std::string, Array>& in) {
  std::vector<Array> want = interp::Interpreter(before).run(in, want_edges);
  std::vector<Array> got = interp::Interpreter(after).run(in, got_edges);
  ASSERT_EQ(want.size(), got.size());
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(want[o].shape(), got[o].shape());
    for (int64_t i = 0; i < want[o].numel(); ++i) ASSERT_EQ(want[o].get(i), got[o].get(i)) << "output " << o << " at " << i;
  }
}

// x [6, 32] @ w [32, 64] in `g`.
Tensor projection(Graph& g) {
  Tensor x = g.input("x", {Expr(6), Expr(32)});
  Tensor w = g.parameter("w", {Expr(32), Expr(64)});
  return ops::matmul(x, w);
}

// exp((x @ w).reshape(6, 4, 16) * 0.125 + b): the scale and the bias read the
// projection's [6, 64] columns as 4 heads of 16.
TEST(EpilogueShape, AScaleAndBiasOnHeadsAreComputedInTheProjectionsShape) {
  Graph g;
  Tensor heads = projection(g).reshape({Expr(6), Expr(4), Expr(16)});
  Tensor b = g.input("b", {Expr(16)});
  Tensor scaled = heads * heads.scalar(0.125f) + b.reshape({Expr(1), Expr(1), Expr(16)}).expand(heads.shape());
  Tensor y = scaled.exp2();
  g.mark_output(y, "y");
  std::vector<Edge> outputs{y.edge()};
  int moved = 0;
  Graph out = passes::epilogues_in_contraction_shape(g, outputs, &moved);
  EXPECT_EQ(moved, 3);  // the scale, the bias add, the exp2
  // The output is the last moved node, in [6, 64], read back as [6, 4, 16].
  const Node& last = out.node(outputs[0].node);
  EXPECT_EQ(last.op, Op::Exp2);
  EXPECT_EQ(last.shape, (Shape{Expr(6), Expr(64)}));
  EXPECT_EQ(outputs[0].view.shape(), (Shape{Expr(6), Expr(4), Expr(16)}));
  // The scale reads the contraction as it is stored.
  const Node& add = out.node(last.inputs[0].node);
  ASSERT_EQ(add.op, Op::Add);
  const Node& scale = out.node(add.inputs[0].node);
  ASSERT_EQ(scale.op, Op::Mul);
  EXPECT_EQ(out.node(scale.inputs[0].node).op, Op::SumReduce);
  EXPECT_TRUE(scale.inputs[0].view.is_contiguous());
  std::vector<Edge> before{y.edge()};
  expect_same_values(g, before, out, outputs, inputs(6, 32, 64, true));
}

// The projection read as [1, 24, 16] (rows and heads merged, as an FX graph's
// view(bsz * heads, -1, d) does) and read by a later matmul through the moved value.
TEST(EpilogueShape, MergedRowsAndHeadsAndALaterReader) {
  Graph g;
  Tensor q = projection(g).reshape({Expr(1), Expr(24), Expr(16)});
  Tensor scaled = q * q.scalar(0.5f);
  Tensor scores = ops::matmul(scaled, scaled.permute({0, 2, 1}));
  g.mark_output(scores, "scores");
  std::vector<Edge> outputs{scores.edge()};
  int moved = 0;
  Graph out = passes::epilogues_in_contraction_shape(g, outputs, &moved);
  EXPECT_EQ(moved, 1);
  std::vector<Edge> before{scores.edge()};
  expect_same_values(g, before, out, outputs, inputs(6, 32, 64, false));
}

TEST(EpilogueShape, ReshapesThatAreNoHeadSplitStay) {
  Graph g;
  Tensor p = projection(g);
  // A channel scale's [6, 64] -> [6, 64, 1, 1], a merge of rows [6, 64] -> [384], and a plain epilogue.
  Tensor a = p.reshape({Expr(6), Expr(64), Expr(1), Expr(1)}).exp2();
  Tensor b = p.reshape({Expr(384)}).exp2();
  Tensor c = p * p.scalar(2.0f);
  for (const Tensor& t : {a, b, c}) g.mark_output(t);
  std::vector<Edge> outputs{a.edge(), b.edge(), c.edge()};
  int moved = -1;
  passes::epilogues_in_contraction_shape(g, outputs, &moved);
  EXPECT_EQ(moved, 0);
}

}  // namespace
}  // namespace lumen
