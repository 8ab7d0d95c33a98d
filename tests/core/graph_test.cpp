// Tests for lumen/core/graph.h and tensor.h: building graphs, shape checks
// and one test per build-time error path.
#include <gtest/gtest.h>

#include <fstream>

#include "lumen/core/error.h"
#include "lumen/core/tensor.h"

namespace lumen {
namespace {

// Expects `f` to throw lumen::Error whose message contains every fragment.
template <typename F>
void expect_error(F&& f, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "expected lumen::Error";
  } catch (const Error& e) {
    for (const auto& frag : fragments) EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what();
  }
}

TEST(Graph, RecordsNodesWithoutRunning) {
  Graph g;
  Tensor a = g.input("a", {3, 4});
  Tensor b = g.input("b", {4, 5});
  Tensor c = a.matmul(b);
  EXPECT_EQ(c.shape(), (Shape{3, 5}));
  // matmul is expand (free) + Mul + SumReduce: exactly two compute nodes.
  EXPECT_EQ(g.size(), 4u);
  EXPECT_EQ(g.node(2).op, Op::Mul);
  EXPECT_EQ(g.node(3).op, Op::SumReduce);
}

TEST(Graph, MovementIsFree) {
  Graph g;
  Tensor a = g.input("a", {2, 3, 4});
  Tensor v = a.permute({2, 0, 1}).reshape({4, 6}).slice(1, 1, 5).flip(0).unsqueeze(0);
  EXPECT_EQ(g.size(), 1u);
  EXPECT_EQ(v.shape(), (Shape{1, 4, 4}));
  EXPECT_EQ(v.node_id(), a.node_id());
}

TEST(Graph, BroadcastingFollowsNumpy) {
  Graph g;
  Tensor a = g.input("a", {3, 1});
  Tensor b = g.input("b", {4});
  EXPECT_EQ((a + b).shape(), (Shape{3, 4}));
  EXPECT_EQ((a * 2.0).shape(), (Shape{3, 1}));
}

TEST(GraphErrors, BinaryShapeMismatchNamesOpAndShapes) {
  Graph g;
  Tensor a = g.input("a", {3, 4}), b = g.input("b", {5, 4});
  expect_error([&] { a + b; }, {"add", "[3, 4]", "[5, 4]"});
}

TEST(GraphErrors, DtypeMismatch) {
  Graph g;
  Tensor a = g.input("a", {3}), b = g.input("b", {3}, DType::I32);
  expect_error([&] { a * b; }, {"mul", "f32", "i32"});
}

TEST(GraphErrors, FloatOnlyOpOnIntegers) {
  Graph g;
  Tensor a = g.input("a", {3}, DType::I32);
  expect_error([&] { a.log2(); }, {"Log2", "float", "i32"});
  expect_error([&] { a / a; }, {"div", "i32"});
}

TEST(GraphErrors, MatmulInnerDims) {
  Graph g;
  Tensor a = g.input("a", {3, 4}), b = g.input("b", {5, 2});
  expect_error([&] { a.matmul(b); }, {"matmul: inner dims differ", "[3, 4]", "[5, 2]"});
}

TEST(GraphErrors, AxisOutOfRange) {
  Graph g;
  Tensor a = g.input("a", {3, 4});
  expect_error([&] { a.sum_reduce(2); }, {"sum_reduce", "axis 2", "[3, 4]"});
  expect_error([&] { a.max_reduce(-3); }, {"max_reduce", "axis -3"});
}

TEST(GraphErrors, GatherNeedsIntegerIndices) {
  Graph g;
  Tensor table = g.input("table", {10, 4}), idx = g.input("idx", {3});
  expect_error([&] { table.gather(idx); }, {"gather", "i32", "f32"});
}

TEST(GraphErrors, ReshapeElementCount) {
  Graph g;
  Tensor a = g.input("a", {3, 4});
  expect_error([&] { a.reshape({5, 2}); }, {"reshape", "[3, 4]", "[5, 2]"});
}

TEST(GraphErrors, DuplicateInputAndOutputNames) {
  Graph g;
  Tensor a = g.input("a", {3});
  expect_error([&] { g.input("a", {3}); }, {"'a'", "already exists"});
  g.mark_output(a, "y");
  expect_error([&] { g.mark_output(a, "y"); }, {"'y'", "already exists"});
}

TEST(GraphErrors, TensorsFromDifferentGraphs) {
  Graph g1, g2;
  Tensor a = g1.input("a", {3}), b = g2.input("b", {3});
  expect_error([&] { a + b; }, {"different graphs"});
}

TEST(GraphErrors, ProvablyFalseDimConstraint) {
  Graph g;
  Expr seq = g.dim("seq");
  g.require(lt(seq, seq + 1), "never fails");
  expect_error([&] { g.require(lt(seq + 1, seq), "seq + 1 < seq is impossible"); }, {"impossible"});
  EXPECT_TRUE(g.constraints().empty());
}

TEST(Graph, IotaPatternsMustUseElementIndices) {
  Graph g;
  Shape s{4};
  Tensor ok = g.iota(loop_index(s, 0) * 2, s);
  EXPECT_EQ(ok.dtype(), DType::I32);
  expect_error([&] { g.iota(Expr::var("k", 0, 3), s); }, {"iota", "'k'"});
}

TEST(GraphDot, ExportsOpsShapesAndDtypes) {
  Graph g;
  Tensor x = g.input("x", {2, 3});
  g.mark_output((x * 2.0).exp(), "y");
  std::string dot = g.to_dot();
  EXPECT_NE(dot.find("Input 'x'"), std::string::npos);
  EXPECT_NE(dot.find("Exp2"), std::string::npos);
  EXPECT_NE(dot.find("[2, 3] f32"), std::string::npos);
  EXPECT_NE(dot.find("output 'y'"), std::string::npos);
}

TEST(GraphDot, DisplayRendersSvgWhenDotIsInstalled) {
  ASSERT_EQ(std::system("command -v dot > /dev/null 2>&1"), 0) << "Graphviz is installed by scripts/setup";
  Graph g;
  Tensor x = g.input("x", {2, 3});
  g.mark_output(x.exp2(), "y");
  std::string path = testing::TempDir() + "/lumen_graph.svg";
  EXPECT_EQ(g.display(path), path);
  std::ifstream f(path);
  std::string content((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(content.find("<svg"), std::string::npos);
  EXPECT_NE(content.find("Exp2"), std::string::npos);
}

}  // namespace
}  // namespace lumen
