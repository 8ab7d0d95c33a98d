// 8-bit storage types: loads widen, casts saturate, arithmetic needs a cast.
// Both backends must agree with values computed here by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "lumen/compile.h"
#include "lumen/core/tensor.h"

namespace lumen {
namespace {

class StorageDtypeTest : public ::testing::TestWithParam<Backend> {};

// A dequantize-and-dot like Q8_0: sum_k float(q[n, k]) * scale[n, k / 8] * x[k].
TEST_P(StorageDtypeTest, DequantizedDotProduct) {
  Graph g;
  const int64_t n = 5, k = 64;
  Tensor q = g.input("q", {Expr(n), Expr(k)}, DType::I8);
  Tensor s = g.input("s", {Expr(n), Expr(k / 8)}, DType::F16);
  Tensor x = g.input("x", {Expr(k)});
  Tensor scale = s.cast(DType::F32).reshape({Expr(n), Expr(k / 8), Expr(1)}).expand({Expr(n), Expr(k / 8), Expr(8)})
                     .reshape({Expr(n), Expr(k)});
  Tensor w = q.cast(DType::F32) * scale;
  g.mark_output((w * x.reshape({Expr(1), Expr(k)}).expand({Expr(n), Expr(k)})).sum(1), "y");
  CompileOptions o;
  o.backend = GetParam();
  o.tuning_cache = false;
  Program p = compile(g, {}, o);
  Array qa(DType::I8, {n, k}), sa(DType::F16, {n, k / 8}), xa(DType::F32, {k});
  for (int64_t i = 0; i < n * k; ++i) qa.set(i, static_cast<double>((i * 37) % 256 - 128));
  for (int64_t i = 0; i < n * k / 8; ++i) sa.set(i, 0.01 * static_cast<double>(i % 7 + 1));
  for (int64_t i = 0; i < k; ++i) xa.set(i, std::sin(static_cast<double>(i)));
  p.set("q", qa);
  p.set("s", sa);
  p.set("x", xa);
  p.run();
  for (int64_t r = 0; r < n; ++r) {
    double want = 0;
    for (int64_t c = 0; c < k; ++c) want += qa.get(r * k + c) * sa.get(r * (k / 8) + c / 8) * xa.get(c);
    EXPECT_NEAR(p.get("y").get(r), want, 1e-3 * (1 + std::abs(want))) << "row " << r;
  }
}

TEST_P(StorageDtypeTest, CastsSaturateAndBytesRoundTrip) {
  Graph g;
  Tensor x = g.input("x", {Expr(40)});
  Tensor b = g.input("b", {Expr(40)}, DType::U8);
  g.mark_output(x.cast(DType::I8), "i8");
  g.mark_output(x.cast(DType::U8), "u8");
  g.mark_output(b.cast(DType::I32) + b.cast(DType::I32), "twice");
  g.mark_output(b.flip(0).contiguous(), "flipped");
  CompileOptions o;
  o.backend = GetParam();
  o.tuning_cache = false;
  Program p = compile(g, {}, o);
  std::vector<float> xs;
  Array ba(DType::U8, {40});
  for (int i = 0; i < 40; ++i) {
    xs.push_back(static_cast<float>(i * 17 - 300) + 0.7f);
    ba.set(i, (i * 53) % 256);
  }
  xs[3] = NAN;
  p.set("x", xs);
  p.set("b", ba);
  p.run();
  for (int i = 0; i < 40; ++i) {
    double t = std::isnan(xs[static_cast<size_t>(i)]) ? 0 : std::trunc(xs[static_cast<size_t>(i)]);
    EXPECT_EQ(p.get("i8").get(i), std::fmin(std::fmax(t, -128), 127)) << i;
    EXPECT_EQ(p.get("u8").get(i), std::fmin(std::fmax(t, 0), 255)) << i;
    EXPECT_EQ(p.get("twice").get(i), 2 * ba.get(i)) << i;
    EXPECT_EQ(p.get("flipped").get(i), ba.get(39 - i)) << i;
  }
  EXPECT_EQ(p.get("i8").dtype(), DType::I8);
}

INSTANTIATE_TEST_SUITE_P(Backends, StorageDtypeTest, ::testing::Values(Backend::Interp, Backend::Cpu),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

TEST(StorageDtypeErrors, ArithmeticNeedsACast) {
  Graph g;
  Tensor q = g.input("q", {Expr(4)}, DType::I8);
  EXPECT_THROW(q.add(q), Error);
  EXPECT_THROW(q.sum_reduce(0), Error);
  EXPECT_THROW(q.sqrt(), Error);
  try {
    q.mul(q);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cast to i32 or f32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lumen
