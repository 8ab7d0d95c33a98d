// Run-time behaviour of lumen/core/typed.h (the compile-time checks are the
// typed_compile_* CTest cases).
#include <gtest/gtest.h>

#include "lumen/lumen.h"

namespace lumen {
namespace {

using typed::Dyn;
using typed::Shape;

TEST(Typed, StaticShapesFlowThroughOps) {
  Graph g;
  auto a = typed::input<Shape<3, 1>>(g, "a");
  auto b = typed::input<Shape<1, 4>>(g, "b");
  typed::Tensor<Shape<3, 4>> c = typed::matmul(a, b);
  typed::Tensor<Shape<3>> s = c.sum<1>();
  Program p = compile(g, {c, s});
  p.set("a", {1.f, 2.f, 3.f});
  p.set("b", {1.f, 1.f, 1.f, 1.f});
  p.run();
  EXPECT_EQ(p.get(s).to_floats(), (std::vector<float>{4, 8, 12}));
}

TEST(Typed, DynamicDimsAreNamedAndCheckedAtBuildTime) {
  Graph g;
  auto x = typed::input<Shape<Dyn, 4>>(g, "x", {"seq"});
  auto w = typed::input<Shape<4, 2>>(g, "w");
  auto y = typed::matmul(x, w);
  EXPECT_EQ(y.untyped().shape()[0], Expr::symbol("seq"));
  EXPECT_THROW(typed::input<Shape<Dyn>>(g, "z"), Error);  // Dyn dim without a name
}

TEST(Typed, WrappingChecksStaticDims) {
  Graph g;
  Tensor t = g.input("t", {2, 3});
  using Right = typed::Tensor<Shape<2, 3>>;
  using Wrong = typed::Tensor<Shape<3, 2>>;
  EXPECT_NO_THROW(Right{t});
  EXPECT_THROW(Wrong{t}, Error);
}

}  // namespace
}  // namespace lumen
