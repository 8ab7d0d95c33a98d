// Tests for lumen/passes/precision.h: which ops the bf16/fp16 pass rounds
// (contraction operands) and which it leaves in fp32 (norms, softmax,
// residual adds, the sums themselves), that the interpreter computes exactly
// the rounding the rewritten graph states, and the errors for bad names.
#include <gtest/gtest.h>

#include <cmath>

#include "lumen/compile.h"
#include "lumen/core/tensor.h"
#include "lumen/ops/linalg.h"
#include "lumen/ops/normalization.h"
#include "lumen/ops/reduce.h"
#include "lumen/passes/precision.h"

namespace lumen {
namespace {

// y = softmax(rms_norm(x) @ w) + (x @ v): two contractions, a norm (a sum of
// squares), a softmax and a residual add.
struct Block {
  Graph g;
  Tensor y;
  Block() : y(make()) { g.mark_output(y, "y"); }
  Tensor make() {
    Tensor x = g.input("x", {Expr(5), Expr(8)});
    Tensor w = g.parameter("w", {Expr(8), Expr(16)});
    Tensor v = g.parameter("v", {Expr(8), Expr(16)});
    Tensor h = ops::matmul(ops::rms_norm(x, 1), w);
    return ops::softmax(h, 1) + ops::matmul(x, v);
  }
};

bool is_cast(const Graph& g, NodeId n, DType to, DType from) {
  const Node& node = g.node(n);
  return node.op == Op::Cast && node.dtype == to && g.node(node.inputs[0].node).dtype == from;
}

TEST(PrecisionPass, Bf16RoundsContractionOperandsAndKeepsTheRestFp32) {
  Block b;
  std::vector<Edge> outputs{b.y.edge()};
  passes::PrecisionReport report;
  Graph r = passes::reduce_precision(b.g, DType::BF16, outputs, &report);
  ASSERT_EQ(report.contractions.size(), 2u) << report.to_string();
  EXPECT_EQ(report.rounded.size(), 4u);  // rms_norm(x), w, x, v: one rounding each
  for (NodeId c : report.contractions) {
    const Node& sum = r.node(c);
    EXPECT_EQ(sum.op, Op::SumReduce);
    EXPECT_EQ(sum.dtype, DType::F32);  // accumulated in fp32
    const Node& product = r.node(sum.inputs[0].node);
    EXPECT_EQ(product.dtype, DType::F32);
    for (const Edge& e : product.inputs) {
      EXPECT_TRUE(is_cast(r, e.node, DType::F32, DType::BF16)) << op_name(r.node(e.node).op);
    }
  }
  // Every other product (the norm's x·x, the softmax's scaling) reads fp32 values, not rounded ones.
  int bf16_nodes = 0, plain_products = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    const Node& n = r.nodes()[i];
    bf16_nodes += n.dtype == DType::BF16 ? 1 : 0;
    bool contraction_product = false;
    for (NodeId c : report.contractions) contraction_product |= r.node(c).inputs[0].node == static_cast<NodeId>(i);
    if (n.op == Op::Mul && !contraction_product) {
      ++plain_products;
      for (const Edge& e : n.inputs) EXPECT_FALSE(is_cast(r, e.node, DType::F32, DType::BF16)) << "node " << i;
    }
    if (n.op == Op::SumReduce || n.op == Op::MaxReduce) {
      EXPECT_EQ(n.dtype, DType::F32) << "node " << i;
    }
  }
  EXPECT_EQ(bf16_nodes, 4);
  EXPECT_GT(plain_products, 0);
  // Outputs keep their dtype and name; inputs and parameters carry over.
  ASSERT_EQ(r.outputs().size(), 1u);
  EXPECT_EQ(r.outputs()[0].name, "y");
  EXPECT_EQ(r.node(outputs[0].node).dtype, DType::F32);
  EXPECT_EQ(r.outputs()[0].edge, outputs[0]);
  EXPECT_TRUE(r.node(r.find_input("w")).parameter);
  EXPECT_FALSE(r.node(r.find_input("x")).parameter);
}

TEST(PrecisionPass, Fp16RoundsToHalfAndFp32IsACopy) {
  Block b;
  std::vector<Edge> outputs{b.y.edge()};
  passes::PrecisionReport report;
  Graph half = passes::reduce_precision(b.g, DType::F16, outputs, &report);
  EXPECT_EQ(report.rounded.size(), 4u);
  for (NodeId n : report.rounded) EXPECT_EQ(half.node(n).dtype, DType::F16);
  std::vector<Edge> same{b.y.edge()};
  Graph copy = passes::reduce_precision(b.g, DType::F32, same, &report);
  EXPECT_EQ(copy.size(), b.g.size());
  EXPECT_EQ(same[0], b.y.edge());
  EXPECT_TRUE(report.contractions.empty());
}

TEST(PrecisionPass, OperandsAlreadyBf16AreNotRoundedAgain) {
  Graph g;
  Tensor a = g.input("a", {Expr(4), Expr(6)}, DType::BF16);
  Tensor b = g.input("b", {Expr(6), Expr(16)});
  g.mark_output(ops::matmul(a.cast(DType::F32), b), "y");
  std::vector<Edge> outputs;
  passes::PrecisionReport report;
  Graph r = passes::reduce_precision(g, DType::BF16, outputs, &report);
  EXPECT_EQ(report.contractions.size(), 1u);
  EXPECT_EQ(report.rounded.size(), 1u);  // only b
}

TEST(PrecisionPass, BadNamesAndDtypesAreErrors) {
  EXPECT_EQ(passes::precision_named("bf16"), DType::BF16);
  EXPECT_EQ(passes::precision_named("fp16"), DType::F16);
  EXPECT_EQ(passes::precision_named("fp32"), DType::F32);
  try {
    passes::precision_named("int8");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown precision 'int8'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bf16"), std::string::npos) << e.what();
  }
  Block b;
  std::vector<Edge> outputs;
  EXPECT_THROW(passes::reduce_precision(b.g, DType::I32, outputs), Error);
}

float bf16(double x) { return bf16_to_float(float_to_bf16(static_cast<float>(x))); }

// The interpreter runs the rewritten graph: x @ w with both operands rounded
// to bf16 and summed in fp32 — what the rounding says, to fp32 accuracy, and
// measurably different from the fp32 product.
TEST(PrecisionPass, InterpreterComputesTheRoundedProduct) {
  Graph g;
  const int64_t m = 3, k = 33, n = 7;
  Tensor x = g.input("x", {Expr(m), Expr(k)});
  Tensor w = g.input("w", {Expr(k), Expr(n)});
  g.mark_output(ops::matmul(x, w), "y");
  Array xa(DType::F32, {m, k}), wa(DType::F32, {k, n});
  for (int64_t i = 0; i < m * k; ++i) xa.set(i, std::sin(0.37 * static_cast<double>(i)) * 3);
  for (int64_t i = 0; i < k * n; ++i) wa.set(i, std::cos(0.11 * static_cast<double>(i)) + 0.001 * static_cast<double>(i));
  double largest_change = 0;
  for (DType precision : {DType::F32, DType::BF16}) {
    CompileOptions o;
    o.backend = Backend::Interp;
    o.precision = precision;
    Program p = compile(g, {}, o);
    p.set("x", xa);
    p.set("w", wa);
    p.run();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double rounded = 0, exact = 0;
        for (int64_t r = 0; r < k; ++r) {
          rounded += static_cast<double>(bf16(xa.get(i * k + r))) * bf16(wa.get(r * n + j));
          exact += xa.get(i * k + r) * wa.get(r * n + j);
        }
        double want = precision == DType::BF16 ? rounded : exact;
        double got = p.get("y").get(i * n + j);
        EXPECT_NEAR(got, want, 1e-5 * (1 + std::fabs(want))) << dtype_name(precision) << " at " << i << "," << j;
        if (precision == DType::BF16) largest_change = std::max(largest_change, std::fabs(got - exact));
      }
    }
  }
  EXPECT_GT(largest_change, 1e-3);  // the rounding happened
}

}  // namespace
}  // namespace lumen
