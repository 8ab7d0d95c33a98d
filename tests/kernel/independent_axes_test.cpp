// Independent axes of a group of kernels (lumen/kernel/independent_axes.h):
// which axes of the group's output every member computes at the same
// coordinate, on the partition fusion makes of small graphs.
#include <gtest/gtest.h>

#include <cmath>

#include "lumen/core/simplify.h"
#include "lumen/core/tensor.h"
#include "lumen/kernel/fusion.h"
#include "lumen/kernel/independent_axes.h"
#include "lumen/kernel/kernel_roots.h"
#include "lumen/ops/attention.h"
#include "lumen/ops/creation.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/linalg.h"
#include "lumen/ops/reduce.h"

namespace lumen::kernel {
namespace {

// The analysis of every kernel of the partition of `out`, as one group.
GroupAxes analyse(const Graph& g, const Tensor& out) {
  Partition p = partition(g, {out.edge()});
  std::vector<NodeId> members;
  for (NodeId n : p.kernels) members.push_back(n);
  EXPECT_GE(members.size(), 2u);
  return independent_axes(g, p.materialized, members);
}

Tensor pairwise_distances(Graph& g, int64_t n, int64_t m, int64_t k) {
  Tensor x = g.input("x", {Expr(n), Expr(k)});
  Tensor y = g.input("y", {Expr(m), Expr(k)});
  Shape cube{Expr(n), Expr(m), Expr(k)};
  Tensor diff = x.unsqueeze(1).expand(cube) - y.unsqueeze(0).expand(cube);
  return (diff * diff).sum(2);
}

TEST(IndependentAxes, AttentionKeepsHeadsAndQueryRowsButNotTheHeadDim) {
  Graph g;
  Shape s{Expr(2), Expr(4), Expr(96), Expr(32)};
  Tensor out = ops::scaled_dot_product_attention(g.input("q", s), g.input("k", s), g.input("v", s), std::nullopt, true);
  GroupAxes a = analyse(g, out);
  ASSERT_TRUE(a.why_not.empty()) << a.why_not;
  ASSERT_EQ(a.independent.size(), 4u);
  EXPECT_TRUE(a.independent[0]);  // batch
  EXPECT_TRUE(a.independent[1]);  // heads
  EXPECT_TRUE(a.independent[2]);  // query rows
  // The scores (the first kernel, the largest node it computes) do not carry the output column e.
  EXPECT_EQ(a.dims.at(a.member_nodes.front().back())[3], -1);
}

TEST(IndependentAxes, AReductionDownTheRowsMakesTheRowAxisDependent) {
  Graph g;
  Tensor d = pairwise_distances(g, 40, 48, 24);
  Tensor out = ops::sum(ops::softmax(d, 0), {1});  // softmax over rows, then sums along each row
  GroupAxes a = analyse(g, out);
  ASSERT_EQ(a.independent.size(), 1u);
  EXPECT_FALSE(a.independent[0]);
}

TEST(IndependentAxes, RowStatisticsKeepTheRowAxis) {
  Graph g;
  Tensor d = pairwise_distances(g, 40, 48, 24);
  Tensor nearest = ops::amin(d, {1}, true);
  Tensor out = ops::sum((nearest - d).exp(), {1});
  GroupAxes a = analyse(g, out);
  ASSERT_TRUE(a.why_not.empty()) << a.why_not;
  ASSERT_EQ(a.independent.size(), 1u);
  EXPECT_TRUE(a.independent[0]);
  // x moves one row (24 elements) per step along the axis, linearly; y does not move.
  bool saw_x = false;
  for (const auto& reads : a.external) {
    for (const auto& [node, read] : reads) {
      bool is_x = g.node(node).name == "x";
      saw_x = saw_x || is_x;
      EXPECT_EQ(read.offsets[0], is_x ? simplify(axis_origin(0, Expr(40)) * 24) : Expr(0)) << g.node(node).name;
      EXPECT_TRUE(read.linear[0]);
    }
  }
  EXPECT_TRUE(saw_x);
}

TEST(IndependentAxes, AShiftedReadMakesTheAxisDependent) {
  // out[i] = t[i + 1] + t[i] for row sums t: a chunk of rows would need the next chunk's first row.
  Graph g;
  Tensor x = g.input("x", {Expr(33), Expr(64)});
  Tensor t = (x * x).sum(1, true);
  Tensor out = t.slice(0, 1, 33) + t.slice(0, 0, 32);
  GroupAxes a = analyse(g, out);
  ASSERT_EQ(a.independent.size(), 2u);
  EXPECT_FALSE(a.independent[0]);
  EXPECT_FALSE(a.independent[1]);  // size 1
}

// Scores of a causal attention written with where over arange rows and columns.
Tensor where_masked_softmax(Graph& g, int64_t s) {
  Shape shape{Expr(1), Expr(2), Expr(s), Expr(16)};
  Tensor scores = ops::matmul(g.input("q", shape), g.input("k", shape).transpose(-1, -2)) * 0.25;
  Tensor row = ops::arange(g, 0, static_cast<double>(s)).unsqueeze(1);
  Tensor col = ops::arange(g, 0, static_cast<double>(s)).unsqueeze(0);
  scores = ops::where(ops::gt(col, row), ops::full(g, {Expr(1)}, -INFINITY), scores);
  return ops::softmax(scores, -1);
}

TEST(IndependentAxes, AWhereMaskKeepsTheQueryRows) {
  // where(c, a, b) is a gather reading one of two places known without the data.
  Graph g;
  GroupAxes a = analyse(g, where_masked_softmax(g, 64));
  ASSERT_TRUE(a.why_not.empty()) << a.why_not;
  ASSERT_EQ(a.independent.size(), 4u);
  EXPECT_TRUE(a.independent[1]);
  EXPECT_TRUE(a.independent[2]);
  EXPECT_TRUE(a.independent[3] == false);  // the softmax reduces along the keys
}

TEST(IndependentAxes, AGatherReadingDataDependentPlacesIsRefused) {
  Graph g;
  Tensor x = g.input("x", {Expr(64), Expr(32)});
  Tensor idx = g.input("i", {Expr(64), Expr(32)}, DType::I32);
  Tensor e = x.exp();
  Tensor gathered = e.reshape({Expr(64 * 32)}).gather(idx, 0);
  GroupAxes a = analyse(g, ops::matmul(ops::softmax(gathered, -1), x.transpose(0, 1)));
  EXPECT_NE(a.why_not.find("gather"), std::string::npos) << a.why_not;
}

TEST(IndependentAxes, AWhereOnDataOverAMatmulIsTheMatmulsKernelWithASelect) {
  // The condition is data (an input's sign): the places still come from where's index.
  Graph g;
  Tensor scores = ops::matmul(g.input("x", {Expr(32), Expr(16)}), g.input("y", {Expr(16), Expr(48)}));
  Tensor keep = ops::gt(g.input("z", {Expr(32), Expr(48)}), ops::full(g, {Expr(1)}, 0.0));
  Tensor out = ops::where(keep, scores * 0.5, ops::full(g, {Expr(1)}, 0.0));
  Partition p = partition(g, {out.edge()});
  ASSERT_TRUE(g.node(out.node_id()).op == Op::Gather);
  EXPECT_GE(contraction_of(g, out.node_id(), p.materialized), 0);
}

}  // namespace
}  // namespace lumen::kernel
