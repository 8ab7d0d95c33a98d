// view_adjoint is the transpose of reading through a view: for every view V,
// random x (base shape) and g (view shape), sum(V(x) * g) == sum(x * V^T(g)).
// The views cover each movement op, their compositions (multi-layer views)
// and overlapping windows.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "lumen/compile.h"
#include "lumen/core/simplify.h"
#include "lumen/core/tensor.h"
#include "lumen/passes/view_adjoint.h"

namespace lumen::passes {
namespace {

Array random_array(const std::vector<int64_t>& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return Array::from_floats(v, shape);
}

std::vector<int64_t> concrete(const Shape& s) {
  std::vector<int64_t> out;
  for (const Expr& d : s) out.push_back(d.value());
  return out;
}

Tensor total(Tensor t) {
  while (t.rank() > 0) t = t.sum_reduce(0);
  return t;
}

void check_adjoint(const std::vector<int64_t>& base, const std::function<Tensor(const Tensor&)>& view, Backend backend) {
  Graph g;
  Shape bs;
  for (int64_t d : base) bs.push_back(Expr(d));
  Tensor x = g.input("x", bs);
  Tensor seen = view(x);
  Tensor up = g.input("g", seen.shape());
  Tensor lhs = total(seen * up);
  Tensor back = view_adjoint(seen.view(), up);
  ASSERT_EQ(concrete(back.shape()), base);
  Tensor rhs = total(x * back);
  CompileOptions o;
  o.backend = backend;
  o.tuning_cache = false;
  Program p = compile(g, {lhs, rhs}, o);
  p.set("x", random_array(base, 1));
  p.set("g", random_array(concrete(seen.shape()), 2));
  p.run();
  float a = p.get(lhs).to_floats()[0], b = p.get(rhs).to_floats()[0];
  EXPECT_NEAR(a, b, 1e-4f * (1 + std::abs(a))) << "view " << seen.view().to_string();
}

// Part k of a [B, T, 3·H·D] projection as attention splits it: [B, H, T, D].
Tensor qkv_part(const Tensor& t, int64_t k) {
  const Shape& s = t.shape();
  Tensor parts = t.reshape({s[0], s[1], Expr(3), Expr(2), Expr(s[2].value() / 6)}).permute({2, 0, 3, 1, 4});
  return parts.slice(0, Expr(k), Expr(k + 1)).squeeze(0);
}

struct Case {
  const char* name;
  std::vector<int64_t> base;
  std::function<Tensor(const Tensor&)> view;
};

std::vector<Case> cases() {
  return {
      {"permute", {2, 3, 4}, [](const Tensor& t) { return t.permute({2, 0, 1}); }},
      {"expand", {3, 1}, [](const Tensor& t) { return t.expand({Expr(2), Expr(3), Expr(5)}); }},
      {"slice_step", {7, 5}, [](const Tensor& t) { return t.slice(0, Expr(1), Expr(7), 2).slice(1, Expr(2), Expr(4)); }},
      {"flip", {4, 3}, [](const Tensor& t) { return t.flip(1).flip(0); }},
      {"pad", {3, 2}, [](const Tensor& t) { return t.pad({{Expr(1), Expr(2)}, {Expr(0), Expr(3)}}); }},
      {"prefix_slice", {3, 5}, [](const Tensor& t) { return t.slice(0, Expr(0), Expr(2)); }},
      {"reshape", {6, 4}, [](const Tensor& t) { return t.reshape({Expr(2), Expr(3), Expr(4)}); }},
      {"permute_reshape", {3, 4}, [](const Tensor& t) { return t.transpose(0, 1).reshape({Expr(12)}); }},
      {"pad_reshape", {3, 2}, [](const Tensor& t) { return t.pad({{Expr(1), Expr(0)}, {Expr(1), Expr(1)}}).reshape({Expr(16)}); }},
      {"unfold_overlapping", {9}, [](const Tensor& t) { return t.unfold(0, 3, 2); }},
      {"unfold_dilated_2d", {6, 7}, [](const Tensor& t) { return t.unfold(0, 2, 1, 2).unfold(2, 3, 2); }},
      {"broadcast_slice_flip", {1, 5}, [](const Tensor& t) { return t.expand({Expr(4), Expr(5)}).slice(1, Expr(1), Expr(5)).flip(1); }},
      {"size_one_dims", {1, 4, 1}, [](const Tensor& t) { return t.permute({2, 1, 0}).expand({Expr(3), Expr(4), Expr(2)}); }},
      {"qkv_split", {2, 3, 24}, [](const Tensor& t) { return qkv_part(t, 1); }},
      {"qkv_split_last", {2, 3, 24}, [](const Tensor& t) { return qkv_part(t, 2); }},
      {"offset_rows_and_columns", {5, 9}, [](const Tensor& t) { return t.slice(0, Expr(2), Expr(5)).slice(1, Expr(3), Expr(7)); }},
      {"windows_past_the_end", {2, 11}, [](const Tensor& t) { return t.slice(1, Expr(1), Expr(11)).unfold(1, 3, 3); }},
  };
}

TEST(ViewAdjoint, IsTheTransposeOfEveryViewInterp) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    check_adjoint(c.base, c.view, Backend::Interp);
  }
}

TEST(ViewAdjoint, IsTheTransposeOfEveryViewCpu) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    check_adjoint(c.base, c.view, Backend::Cpu);
  }
}

// The gradient of one part of a split along a merged last dim pads that dim
// (a range of columns a kernel can loop over), not the flat index: no layer
// of the result's view pads a dim longer than a row.
TEST(ViewAdjoint, SplitOfAMergedDimPadsThatDim) {
  Graph g;
  Tensor x = g.input("x", {Expr(4), Expr(8), Expr(96)});
  Tensor part = qkv_part(x, 1);
  Tensor grad = g.input("g", part.shape());
  Tensor back = view_adjoint(part.view(), grad);
  for (const ViewLayer& layer : back.view().layers()) {
    for (size_t d = 0; d < layer.mask.size(); ++d) {
      auto [begin, end] = layer.mask[d];
      bool padded = !simplify(begin).is_const(0) || !simplify(end - layer.shape[d]).is_const(0);
      if (padded) {
        EXPECT_LE(layer.shape[d].value(), 96) << back.view().to_string();
      }
    }
  }
}

TEST(ViewAdjoint, ContiguousViewIsUnchanged) {
  Graph g;
  Tensor x = g.input("x", {Expr(2), Expr(3)});
  Tensor back = view_adjoint(x.view(), x);
  EXPECT_EQ(back.node_id(), x.node_id());
  EXPECT_TRUE(back.view().is_contiguous());
}

}  // namespace
}  // namespace lumen::passes
