// autodiff: gradients with closed forms (products, max with ties, gather as a
// scatter-add, broadcasting), zeros for unrelated tensors, and the errors for
// a non-scalar loss, an integer tensor and a broadcast view.
#include <gtest/gtest.h>

#include "lumen/compile.h"
#include "lumen/core/tensor.h"
#include "lumen/passes/autodiff.h"

namespace lumen::passes {
namespace {

Tensor total(Tensor t) {
  while (t.rank() > 0) t = t.sum_reduce(0);
  return t;
}

std::vector<float> run_get(Graph& g, const std::vector<Tensor>& outs, const std::map<std::string, Array>& feeds, size_t which) {
  CompileOptions o;
  o.backend = Backend::Interp;
  Program p = compile(g, outs, o);
  for (const auto& [name, value] : feeds) p.set(name, value);
  p.run();
  return p.get(outs[which]).to_floats();
}

TEST(Autodiff, ProductAndBroadcast) {
  Graph g;
  Tensor x = g.input("x", {Expr(2), Expr(3)});
  Tensor w = g.input("w", {Expr(3)});
  Tensor loss = total(x * x * w);  // d/dx = 2xw, d/dw = sum_rows x^2
  std::vector<Tensor> grads = gradients(loss, {x, w});
  std::map<std::string, Array> feeds = {{"x", Array::from_floats({1, 2, 3, -1, 0, 2}, {2, 3})},
                                        {"w", Array::from_floats({0.5f, -1, 2}, {3})}};
  std::vector<Tensor> outs = {loss, grads[0], grads[1]};
  EXPECT_EQ(run_get(g, outs, feeds, 1), (std::vector<float>{1, -4, 12, -1, 0, 8}));
  EXPECT_EQ(run_get(g, outs, feeds, 2), (std::vector<float>{2, 4, 13}));
}

TEST(Autodiff, MaxReduceSharesTies) {
  Graph g;
  Tensor x = g.input("x", {Expr(2), Expr(3)});
  Tensor loss = total(x.max_reduce(1));
  std::vector<Tensor> grads = gradients(loss, {x});
  std::map<std::string, Array> feeds = {{"x", Array::from_floats({1, 5, 5, 2, 0, -1}, {2, 3})}};
  EXPECT_EQ(run_get(g, {loss, grads[0]}, feeds, 1), (std::vector<float>{0, 0.5f, 0.5f, 1, 0, 0}));
}

TEST(Autodiff, GatherScatterAdds) {
  Graph g;
  Tensor table = g.input("table", {Expr(4), Expr(2)});
  Tensor idx = g.input("idx", {Expr(3)}, DType::I32);
  Tensor rows = table.gather(idx, 0);  // [3, 2]
  Tensor loss = total(rows * g.iota(loop_index({Expr(3), Expr(2)}, 0) + 1, {Expr(3), Expr(2)}).cast(DType::F32));
  std::vector<Tensor> grads = gradients(loss, {table});
  std::map<std::string, Array> feeds = {{"table", Array(DType::F32, {4, 2})}, {"idx", Array::from_ints({2, 0, 2}, {3})}};
  // Row 2 is read by positions 0 and 2 (weights 1 and 3), row 0 by position 1 (weight 2).
  EXPECT_EQ(run_get(g, {loss, grads[0]}, feeds, 1), (std::vector<float>{2, 2, 0, 0, 4, 4, 0, 0}));
}

TEST(Autodiff, UnrelatedTensorGetsZerosAndSlicedWrt) {
  Graph g;
  Tensor x = g.input("x", {Expr(4)});
  Tensor y = g.input("y", {Expr(2)});
  Tensor part = x.slice(0, Expr(1), Expr(3));
  Tensor loss = total(part * part);
  std::vector<Tensor> grads = gradients(loss, {x, y, part});
  std::map<std::string, Array> feeds = {{"x", Array::from_floats({1, 2, 3, 4}, {4})}, {"y", Array(DType::F32, {2})}};
  std::vector<Tensor> outs = {loss, grads[0], grads[1], grads[2]};
  EXPECT_EQ(run_get(g, outs, feeds, 1), (std::vector<float>{0, 4, 6, 0}));
  EXPECT_EQ(run_get(g, outs, feeds, 2), (std::vector<float>{0, 0}));
  EXPECT_EQ(run_get(g, outs, feeds, 3), (std::vector<float>{4, 6}));
}

TEST(Autodiff, Errors) {
  Graph g;
  Tensor x = g.input("x", {Expr(2), Expr(3)});
  Tensor i = g.input("i", {Expr(2)}, DType::I32);
  try {
    gradients(x, {x});
    FAIL() << "a non-scalar loss must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be a scalar"), std::string::npos) << e.what();
  }
  Tensor loss = total(x);
  EXPECT_THROW(gradients(loss, {i}), Error);
  try {
    gradients(loss, {x.slice(1, Expr(0), Expr(1)).expand({Expr(2), Expr(4)})});
    FAIL() << "a broadcast view must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than once"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lumen::passes
