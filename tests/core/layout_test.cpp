// Tests for lumen/core/layout.h: an elementwise op over operands read transposed is a node in
// their memory order, seen through a permuted view; the values are checked against PyTorch by
// tests/python/test_nn.py (channels-last chains of convolutions).
#include <gtest/gtest.h>

#include "lumen/core/layout.h"
#include "lumen/core/tensor.h"

namespace lumen {
namespace {

Shape node_shape(const Tensor& t) { return t.graph()->node(t.node_id()).shape; }

TEST(Layout, AnOpOverAChannelsLastViewIsANodeInMemoryOrder) {
  Graph g;
  Tensor nhwc = g.input("x", {2, 5, 6, 16});
  Tensor nchw = nhwc.permute({0, 3, 1, 2});
  Tensor y = nchw.exp2();
  EXPECT_EQ(y.shape(), (Shape{2, 16, 5, 6}));
  EXPECT_EQ(node_shape(y), (Shape{2, 5, 6, 16}));
  // Its readers see the logical order through strides: C innermost in memory.
  const ViewLayer& top = y.view().layers().back();
  EXPECT_EQ(top.strides, (std::vector<Expr>{480, 1, 96, 16}));
  // Broadcast operands (a bias per channel) follow the transposed one.
  Tensor bias = g.input("b", {1, 16, 1, 1});
  EXPECT_EQ(node_shape(nchw + bias), (Shape{2, 5, 6, 16}));
  EXPECT_EQ(node_shape(nchw.cast(DType::F16)), (Shape{2, 5, 6, 16}));
}

TEST(Layout, TheOpTakesTheShapeOfTheNodeItReadsStraightThrough) {
  // Positions merged in the producer ([N, H·W, C], a convolution's output): the op keeps them
  // merged, so a producer fused into it keeps its own loops.
  Graph g;
  Tensor flat = g.input("x", {2, 30, 16});
  Tensor nchw = flat.reshape({2, 5, 6, 16}).permute({0, 3, 1, 2});
  Tensor y = nchw * nchw;
  EXPECT_EQ(node_shape(y), (Shape{2, 30, 16}));
  EXPECT_EQ(y.shape(), (Shape{2, 16, 5, 6}));
}

TEST(Layout, AnOperandReadInLogicalOrderKeepsTheLogicalOrder) {
  Graph g;
  Tensor nchw = g.input("x", {2, 5, 6, 16}).permute({0, 3, 1, 2});
  Tensor plain = g.input("p", {2, 16, 5, 6});
  EXPECT_EQ(node_shape(nchw + plain), (Shape{2, 16, 5, 6}));
  // Two operands transposed differently: no order agrees, the logical one is kept.
  Tensor other = g.input("o", {16, 2, 5, 6}).permute({1, 0, 2, 3});
  EXPECT_EQ(node_shape(nchw + other), (Shape{2, 16, 5, 6}));
}

TEST(Layout, PermutationsThatKeepTheInnermostDimKeepTheLogicalOrder) {
  // Attention's heads moved in front of the positions: rows are read in order as they are.
  Graph g;
  Tensor heads = g.input("q", {2, 8, 4, 16}).permute({0, 2, 1, 3});
  EXPECT_EQ(node_shape(heads.exp2()), (Shape{2, 4, 8, 16}));
  // A padded or sliced view does not read every element once: no memory order.
  Tensor nchw = g.input("x", {2, 5, 6, 16}).permute({0, 3, 1, 2});
  Tensor part = nchw.slice(2, 0, 4);
  EXPECT_EQ(node_shape(part.exp2()), (Shape{2, 16, 4, 6}));
  EXPECT_FALSE(memory_order({part}).has_value());
}

TEST(Layout, AMatrixVectorProductKeepsTheLogicalOrder) {
  // A vector broadcast beside a transposed matrix, to be summed along its rows: the vector walks
  // the logical rows and is broadcast along the matrix's innermost dim, so the product stays in
  // logical order (a contraction over its last axis, as the sum expects).
  Graph g;
  Tensor w = g.input("w", {64, 32}).permute({1, 0});         // [32, 64], rows strided
  Tensor v = g.input("v", {1, 64}).expand({Expr(32), Expr(64)});  // the same row for every output
  EXPECT_EQ(node_shape(w * v), (Shape{32, 64}));
  // A per-row scale (broadcast along the logical last dim) does not hold it back.
  Tensor s = g.input("s", {32, 1}).expand({Expr(32), Expr(64)});
  EXPECT_EQ(node_shape(w * s), (Shape{64, 32}));
}

}  // namespace
}  // namespace lumen
