// I64 and F64 through every primitive on the interpreter, the CPU backend and
// OpenCL (PoCL here): the interpreter carries int64 exactly (never through
// double) and the generated C and OpenCL C agree with it, the CPU backend's
// also under the schedule search.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "lumen/lumen.h"

namespace lumen {
namespace {

constexpr int64_t kPast53 = (int64_t{1} << 62) + 1;

Program compile_on(const Graph& g, const std::vector<Tensor>& outs, Backend backend, double budget = 0) {
  CompileOptions o;
  o.backend = backend;
  o.search_budget_s = budget;
  o.tuning_cache = false;
  return compile(g, outs, o);
}

class Dtype64 : public ::testing::TestWithParam<Backend> {};

TEST_P(Dtype64, IntegerPrimitivesAreExactPastTwoTo53) {
  Graph g;
  Tensor a = g.input("a", {4}, DType::I64), b = g.input("b", {4}, DType::I64);
  std::vector<Tensor> outs{a.add(b), a.mul(b), a.mod(b), a.less_than(b), a.reshape({2, 2}).sum_reduce(1),
                           a.reshape({2, 2}).max_reduce(0), a.add(g.constant_int(kPast53).expand({4})),
                           a.add(g.constant_int(INT64_MIN).expand({4}))};
  Program p = compile_on(g, outs, GetParam());
  p.set("a", Array::from_int64s({kPast53, 3000000000LL, -7, INT64_MAX}, {4}));
  p.set("b", Array::from_int64s({2, -3000000001LL, 3, 1}, {4}));
  p.run();
  auto at = [&](size_t k, int64_t i) { return p.get(outs[k]).load(i).i; };
  EXPECT_EQ(at(0, 0), kPast53 + 2);
  EXPECT_EQ(at(0, 1), -1);
  EXPECT_EQ(at(0, 3), INT64_MIN);  // wraps
  EXPECT_EQ(at(1, 0), static_cast<int64_t>(2 * static_cast<uint64_t>(kPast53)));  // wraps
  EXPECT_EQ(at(1, 1), static_cast<int64_t>(static_cast<uint64_t>(3000000000LL) * static_cast<uint64_t>(-3000000001LL)));
  EXPECT_EQ(at(2, 0), 1);   // truncated remainder
  EXPECT_EQ(at(2, 2), -1);
  EXPECT_EQ(at(3, 1), 0);
  EXPECT_EQ(at(3, 2), 1);
  EXPECT_EQ(at(4, 0), kPast53 + 3000000000LL);
  EXPECT_EQ(at(5, 1), INT64_MAX);
  EXPECT_EQ(at(6, 2), kPast53 - 7);
  EXPECT_EQ(at(7, 3), -1);  // INT64_MAX + INT64_MIN
  EXPECT_EQ(p.get(outs[0]).dtype(), DType::I64);
  EXPECT_EQ(p.get(outs[3]).dtype(), DType::Bool);
}

TEST_P(Dtype64, FloatPrimitivesComputeInDouble) {
  Graph g;
  Tensor x = g.input("x", {3}, DType::F64);
  std::vector<Tensor> outs{x.log2(), x.exp2(), x.sin(), x.sqrt(), x.recip(), x.add(x.mul(x)), x.mod(x.sqrt()),
                           x.sum_reduce(0), x.max_reduce(0), x.contiguous()};
  Program p = compile_on(g, outs, GetParam());
  std::vector<double> xs{0.1, 2.5, 1e10 + 0.5};
  p.set("x", Array::from_doubles(xs, {3}));
  p.run();
  auto near = [](double got, double want) {
    if (std::isinf(want)) {
      EXPECT_EQ(got, want);
    } else {
      EXPECT_NEAR(got, want, 1e-14 * std::fabs(want) + 1e-300) << want;
    }
  };
  for (int64_t i = 0; i < 3; ++i) {
    double v = xs[static_cast<size_t>(i)];
    near(p.get(outs[0]).get(i), std::log2(v));
    near(p.get(outs[1]).get(i), std::exp2(v));  // inf for 1e10
    near(p.get(outs[2]).get(i), std::sin(v));
    near(p.get(outs[3]).get(i), std::sqrt(v));
    near(p.get(outs[4]).get(i), 1.0 / v);
    near(p.get(outs[5]).get(i), v + v * v);
    near(p.get(outs[6]).get(i), std::fmod(v, std::sqrt(v)));
    EXPECT_EQ(p.get(outs[9]).get(i), v);
  }
  near(p.get(outs[7]).get(0), 0.1 + 2.5 + (1e10 + 0.5));
  EXPECT_EQ(p.get(outs[8]).get(0), 1e10 + 0.5);  // exact: f32 would round it
}

TEST_P(Dtype64, CastsBetween64BitAndOtherDtypes) {
  Graph g;
  Tensor l = g.input("l", {3}, DType::I64);
  Tensor d = g.input("d", {3}, DType::F64);
  std::vector<Tensor> outs{l.cast(DType::I32), l.cast(DType::F64), l.cast(DType::F32), d.cast(DType::I64),
                           d.cast(DType::F32), d.cast(DType::I32), l.cast(DType::I8), l.cast(DType::Bool),
                           d.cast(DType::I32).cast(DType::I64)};
  Program p = compile_on(g, outs, GetParam());
  p.set("l", Array::from_int64s({(int64_t{1} << 32) + 5, -3, kPast53}, {3}));
  p.set("d", Array::from_doubles({-2.75, 1e300, 3e9 + 0.5}, {3}));
  p.run();
  EXPECT_EQ(p.get(outs[0]).load(0).i, 5);  // wraps like torch
  EXPECT_EQ(p.get(outs[1]).get(1), -3.0);
  EXPECT_EQ(p.get(outs[2]).get(2), static_cast<double>(static_cast<float>(kPast53)));
  EXPECT_EQ(p.get(outs[3]).load(0).i, -2);
  EXPECT_EQ(p.get(outs[3]).load(1).i, INT64_MAX);  // saturates
  EXPECT_EQ(p.get(outs[3]).load(2).i, 3000000000LL);
  EXPECT_TRUE(std::isinf(p.get(outs[4]).get(1)));
  EXPECT_EQ(p.get(outs[5]).load(1).i, INT32_MAX);
  EXPECT_EQ(p.get(outs[6]).load(2).i, 127);  // 8-bit storage saturates
  EXPECT_EQ(p.get(outs[7]).load(1).i, 1);
  EXPECT_EQ(p.get(outs[8]).load(2).i, INT32_MAX);
}

TEST_P(Dtype64, GatherTakesI64IndicesAndRejectsOutOfRange) {
  Graph g;
  Tensor data = g.input("data", {4}, DType::I64);
  Tensor idx = g.input("idx", {3}, DType::I64);
  Tensor out = data.gather(idx, 0);
  Program p = compile_on(g, {out}, GetParam());
  p.set("data", Array::from_int64s({10, kPast53, -kPast53, 40}, {4}));
  p.set("idx", Array::from_int64s({1, 2, 3}, {3}));
  p.run();
  EXPECT_EQ(p.get(out).load(0).i, kPast53);
  EXPECT_EQ(p.get(out).load(1).i, -kPast53);
  p.set("idx", Array::from_int64s({(int64_t{1} << 32) + 1, 0, 0}, {3}));  // would wrap to 1 as i32
  EXPECT_THROW(p.run(), Error);
}

TEST_P(Dtype64, IotaPatternsFillI64Exactly) {
  Graph g;
  Shape s{Expr(3)};
  // Index expressions hold values within +-2^62 exactly (past 2^53 here).
  constexpr int64_t base = (int64_t{1} << 61) + 1;
  Tensor t = g.iota(loop_index(s, 0) * (int64_t{1} << 40) + base, s, DType::I64);
  Program p = compile_on(g, {t}, GetParam());
  p.run();
  EXPECT_EQ(p.get(t).load(2).i, base + 2 * (int64_t{1} << 40));
  EXPECT_THROW(g.iota(Expr(INT64_MAX), {}, DType::I64), Error);
}

INSTANTIATE_TEST_SUITE_P(Backends, Dtype64, ::testing::Values(Backend::Interp, Backend::Cpu, Backend::OpenCl),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

TEST(Dtype64Search, SearchedScheduleOfAWideReductionAgreesWithTheInterpreter) {
  Graph g;
  Tensor a = g.input("a", {64, 96}, DType::F64), b = g.input("b", {96, 48}, DType::F64);
  Tensor l = g.input("l", {64, 96}, DType::I64);
  Tensor c = a.reshape({64, 96, 1}).expand({64, 96, 48}).mul(b.reshape({1, 96, 48}).expand({64, 96, 48})).sum_reduce(1);
  Tensor s = l.mul(l).sum_reduce(1);
  Array av(DType::F64, {64, 96}), bv(DType::F64, {96, 48}), lv(DType::I64, {64, 96});
  for (int64_t i = 0; i < av.numel(); ++i) av.set(i, std::sin(static_cast<double>(i)));
  for (int64_t i = 0; i < bv.numel(); ++i) bv.set(i, std::cos(static_cast<double>(i)));
  for (int64_t i = 0; i < lv.numel(); ++i) lv.store(i, Scalar::of_int(3000000000LL + i));
  auto run = [&](Backend backend, double budget) {
    Program p = compile_on(g, {c, s}, backend, budget);
    p.set("a", av);
    p.set("b", bv);
    p.set("l", lv);
    p.run();
    return std::make_pair(p.get(c).clone(), p.get(s).clone());
  };
  auto want = run(Backend::Interp, 0);
  auto got = run(Backend::Cpu, 1.0);
  for (int64_t i = 0; i < want.first.numel(); ++i) EXPECT_NEAR(got.first.get(i), want.first.get(i), 1e-12) << i;
  for (int64_t i = 0; i < want.second.numel(); ++i) EXPECT_EQ(got.second.load(i).i, want.second.load(i).i) << i;
}

}  // namespace
}  // namespace lumen
