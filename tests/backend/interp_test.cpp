// Tests for lumen/backend/interp: every primitive in every dtype it accepts,
// the documented NaN/inf and integer semantics, and each run-time error path.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "lumen/lumen.h"

namespace lumen {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Runs a one-op graph on `values` (a 1-D input of `dtype`) and returns the output as doubles.
std::vector<double> run_unary(DType dtype, const std::vector<double>& values, Tensor (*op)(const Tensor&),
                              Backend backend = Backend::Cpu) {
  Graph g;
  Tensor x = g.input("x", {static_cast<int64_t>(values.size())}, dtype);
  Tensor y = op(x);
  CompileOptions options;
  options.backend = backend;
  Program p = compile(g, {y}, options);
  Array a(dtype, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) a.set(static_cast<int64_t>(i), values[i]);
  p.set("x", a);
  p.run();
  std::vector<double> out;
  for (int64_t i = 0; i < p.get(y).numel(); ++i) out.push_back(p.get(y).get(i));
  return out;
}

std::vector<double> run_binary(DType dtype, const std::vector<double>& a, const std::vector<double>& b, Op op) {
  Graph g;
  auto n = static_cast<int64_t>(a.size());
  Tensor x = g.input("a", {n}, dtype), y = g.input("b", {n}, dtype);
  Tensor z = op == Op::Add ? x.add(y) : op == Op::Mul ? x.mul(y) : op == Op::Mod ? x.mod(y) : x.less_than(y);
  Program p = compile(g, {z});
  Array xa(dtype, {n}), ya(dtype, {n});
  for (int64_t i = 0; i < n; ++i) {
    xa.set(i, a[static_cast<size_t>(i)]);
    ya.set(i, b[static_cast<size_t>(i)]);
  }
  p.set("a", xa);
  p.set("b", ya);
  p.run();
  std::vector<double> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(p.get(z).get(i));
  return out;
}

const DType kFloats[] = {DType::F32, DType::F16, DType::BF16};

// The interpreter (the reference) rounds libm's results to the dtype exactly. The CPU backend runs
// a row of 5 in one SIMD vector, whose log2 / exp2 / sin are polynomials: within 2 units in the
// last place of the dtype (sqrt and 1/x stay exact).
TEST(InterpUnary, MatchesLibmRoundedToDtype) {
  std::vector<double> xs = {0.25, 1.0, 1.5, 3.0, 100.0};
  for (Backend backend : {Backend::Interp, Backend::Cpu}) {
    for (DType dt : kFloats) {
      auto log2 = run_unary(dt, xs, [](const Tensor& t) { return t.log2(); }, backend);
      auto exp2 = run_unary(dt, xs, [](const Tensor& t) { return t.exp2(); }, backend);
      auto sin = run_unary(dt, xs, [](const Tensor& t) { return t.sin(); }, backend);
      auto sqrt = run_unary(dt, xs, [](const Tensor& t) { return t.sqrt(); }, backend);
      auto recip = run_unary(dt, xs, [](const Tensor& t) { return t.recip(); }, backend);
      int mantissa_bits = dt == DType::F32 ? 23 : dt == DType::F16 ? 10 : 7;
      double ulp = std::ldexp(1.0, -mantissa_bits);
      for (size_t i = 0; i < xs.size(); ++i) {
        double x = round_to_dtype(xs[i], dt);
        std::string where = std::string(dtype_name(dt)) + (backend == Backend::Interp ? " interp" : " cpu");
        auto near = [&](double got, double want) {
          if (backend == Backend::Interp || got == want) {  // (an overflow to inf is equal, not near)
            EXPECT_EQ(got, want) << where;
          } else {
            EXPECT_NEAR(got, want, 2 * ulp * std::max(std::abs(want), 1.0)) << where;
          }
        };
        near(log2[i], round_to_dtype(std::log2(x), dt));
        near(exp2[i], round_to_dtype(std::exp2(x), dt));
        near(sin[i], round_to_dtype(std::sin(x), dt));
        EXPECT_EQ(sqrt[i], round_to_dtype(std::sqrt(x), dt)) << where;
        EXPECT_EQ(recip[i], round_to_dtype(1.0 / x, dt)) << where;
      }
    }
  }
}

TEST(InterpUnary, NanAndInfinityBehaviour) {
  for (DType dt : kFloats) {
    auto log2 = run_unary(dt, {-1.0, 0.0, -0.0, kInf}, [](const Tensor& t) { return t.log2(); });
    EXPECT_TRUE(std::isnan(log2[0]));
    EXPECT_EQ(log2[1], -kInf);
    EXPECT_EQ(log2[2], -kInf);
    EXPECT_EQ(log2[3], kInf);
    auto sqrt = run_unary(dt, {-1.0, -0.0, kInf}, [](const Tensor& t) { return t.sqrt(); });
    EXPECT_TRUE(std::isnan(sqrt[0]));
    EXPECT_EQ(sqrt[1], 0.0);
    EXPECT_EQ(sqrt[2], kInf);
    auto recip = run_unary(dt, {0.0, -0.0, kInf}, [](const Tensor& t) { return t.recip(); });
    EXPECT_EQ(recip[0], kInf);
    EXPECT_EQ(recip[1], -kInf);
    EXPECT_EQ(recip[2], 0.0);
    auto exp2 = run_unary(dt, {-kInf, 1e6}, [](const Tensor& t) { return t.exp2(); });
    EXPECT_EQ(exp2[0], 0.0);
    EXPECT_EQ(exp2[1], kInf);
  }
}

TEST(InterpBinary, FloatArithmeticRoundsPerOp) {
  for (DType dt : kFloats) {
    std::vector<double> a = {1.5, -2.25, 1e3, 7.0}, b = {0.1, 4.0, 3.0, -2.0};
    auto add = run_binary(dt, a, b, Op::Add);
    auto mul = run_binary(dt, a, b, Op::Mul);
    auto lt = run_binary(dt, a, b, Op::LessThan);
    for (size_t i = 0; i < a.size(); ++i) {
      double x = round_to_dtype(a[i], dt), y = round_to_dtype(b[i], dt);
      EXPECT_EQ(add[i], round_to_dtype(x + y, dt));
      EXPECT_EQ(mul[i], round_to_dtype(x * y, dt));
      EXPECT_EQ(lt[i], x < y ? 1.0 : 0.0);
    }
  }
}

TEST(InterpBinary, ModIsTruncatedRemainder) {
  // Sign follows the dividend, as C fmod and %; float x mod 0 is NaN.
  auto f = run_binary(DType::F32, {7, -7, 7, -7, 5.5, 1}, {3, 3, -3, -3, 2, 0}, Op::Mod);
  EXPECT_EQ(f[0], 1);
  EXPECT_EQ(f[1], -1);
  EXPECT_EQ(f[2], 1);
  EXPECT_EQ(f[3], -1);
  EXPECT_EQ(f[4], 1.5);
  EXPECT_TRUE(std::isnan(f[5]));
  // Integer: same signs; x mod 0 is defined as 0 (never a crash).
  auto i = run_binary(DType::I32, {7, -7, 7, -7, 5, -2147483648.0}, {3, 3, -3, -3, 0, -1}, Op::Mod);
  EXPECT_EQ(i, (std::vector<double>{1, -1, 1, -1, 0, 0}));
}

TEST(InterpBinary, IntegersWrapAndBoolsAreLogical) {
  auto add = run_binary(DType::I32, {2147483647.0, -5}, {1, 3}, Op::Add);
  EXPECT_EQ(add, (std::vector<double>{-2147483648.0, -2}));
  auto mul = run_binary(DType::I32, {65536, -4}, {65536, 3}, Op::Mul);
  EXPECT_EQ(mul, (std::vector<double>{0, -12}));
  auto lt = run_binary(DType::I32, {1, 2, 3}, {2, 2, 2}, Op::LessThan);
  EXPECT_EQ(lt, (std::vector<double>{1, 0, 0}));
  auto bor = run_binary(DType::Bool, {0, 1, 0, 1}, {0, 0, 1, 1}, Op::Add);
  auto band = run_binary(DType::Bool, {0, 1, 0, 1}, {0, 0, 1, 1}, Op::Mul);
  auto blt = run_binary(DType::Bool, {0, 1, 0, 1}, {0, 0, 1, 1}, Op::LessThan);
  EXPECT_EQ(bor, (std::vector<double>{0, 1, 1, 1}));
  EXPECT_EQ(band, (std::vector<double>{0, 0, 0, 1}));
  EXPECT_EQ(blt, (std::vector<double>{0, 0, 1, 0}));
}

TEST(InterpReduce, SumAndMaxOverEachAxis) {
  Graph g;
  Tensor x = g.input("x", {2, 3});
  Tensor s0 = x.sum_reduce(0), s1 = x.sum_reduce(1), m0 = x.max_reduce(0), m1 = x.max_reduce(-1);
  Program p = compile(g, {s0, s1, m0, m1});
  p.set("x", {1.f, -2.f, 3.f, 4.f, 5.f, -6.f});
  p.run();
  EXPECT_EQ(p.get(s0).to_floats(), (std::vector<float>{5, 3, -3}));
  EXPECT_EQ(p.get(s1).to_floats(), (std::vector<float>{2, 3}));
  EXPECT_EQ(p.get(m0).to_floats(), (std::vector<float>{4, 5, 3}));
  EXPECT_EQ(p.get(m1).to_floats(), (std::vector<float>{3, 5}));
}

TEST(InterpReduce, NanPropagatesAndEmptyReductionsAreIdentities) {
  Graph g;
  Tensor x = g.input("x", {2, 2});
  Tensor e = g.input("e", {3, 0});
  Tensor m = x.max_reduce(1), es = e.sum_reduce(1), em = e.max_reduce(1);
  Program p = compile(g, {m, es, em});
  p.set("x", {NAN, 1.f, 2.f, 1.f});
  p.set("e", Array(DType::F32, {3, 0}));
  p.run();
  EXPECT_TRUE(std::isnan(p.get(m).get(0)));
  EXPECT_EQ(p.get(m).get(1), 2);
  EXPECT_EQ(p.get(es).to_floats(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(p.get(em).get(0), -kInf);
}

TEST(InterpReduce, IntegerAndHalfReductions) {
  Graph g;
  Tensor i = g.input("i", {4}, DType::I32);
  Tensor h = g.input("h", {3}, DType::F16);
  Tensor si = i.sum_reduce(0), mi = i.max_reduce(0), sh = h.sum_reduce(0);
  Program p = compile(g, {si, mi, sh});
  p.set("i", std::vector<int32_t>{2147483647, 1, -3, 4});
  Array ha(DType::F16, {3});
  ha.set(0, 2048);
  ha.set(1, 1);
  ha.set(2, 1);
  p.set("h", ha);
  p.run();
  EXPECT_EQ(p.get(si).get(0), -2147483647.0);  // wraps
  EXPECT_EQ(p.get(mi).get(0), 2147483647.0);
  EXPECT_EQ(p.get(sh).get(0), 2050.0);  // accumulated wide, rounded once (2048+1+1 per-op would give 2048)
}

TEST(InterpCast, ConversionsBetweenEveryDtype) {
  Graph g;
  Tensor x = g.input("x", {5});
  Tensor to_i = x.cast(DType::I32), to_b = x.cast(DType::Bool), to_h = x.cast(DType::F16), to_bf = x.cast(DType::BF16);
  Tensor back = to_i.cast(DType::F32), from_bool = to_b.cast(DType::I32);
  Program p = compile(g, {to_i, to_b, to_h, to_bf, back, from_bool});
  p.set("x", {-2.7f, 0.f, NAN, 3e10f, 1.0009765625f});
  p.run();
  EXPECT_EQ(p.get(to_i).to_floats(), (std::vector<float>{-2, 0, 0, 2147483647.f, 1}));
  EXPECT_EQ(p.get(to_b).to_floats(), (std::vector<float>{1, 0, 1, 1, 1}));
  EXPECT_EQ(p.get(to_h).get(4), 1.0009765625);   // exactly representable in f16
  EXPECT_EQ(p.get(to_bf).get(4), 1.0);            // bf16 has 8 bits of mantissa
  EXPECT_EQ(p.get(from_bool).to_floats(), (std::vector<float>{1, 0, 1, 1, 1}));
}

TEST(InterpConstant, NumbersAndIndexPatterns) {
  Graph g;
  Shape s{3, 4};
  Tensor tri = g.iota(ge(loop_index(s, 1), loop_index(s, 0)), s, DType::Bool);  // upper triangle
  Tensor ar = g.iota(loop_index(Shape{5}, 0) * 3 - 1, {5});
  Tensor c = g.constant(2.5).reshape({1}).expand({3});
  Program p = compile(g, {tri, ar, c});
  p.run();
  EXPECT_EQ(p.get(tri).to_floats(), (std::vector<float>{1, 1, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1}));
  EXPECT_EQ(p.get(ar).to_floats(), (std::vector<float>{-1, 2, 5, 8, 11}));
  EXPECT_EQ(p.get(c).to_floats(), (std::vector<float>{2.5, 2.5, 2.5}));
}

TEST(InterpGather, SelectsAlongAnAxis) {
  Graph g;
  Tensor table = g.input("table", {4, 2});
  Tensor idx = g.input("idx", {2, 2}, DType::I32);
  Tensor rows = table.gather(idx, 0);     // [2, 2, 2]
  Tensor cols = table.gather(idx.reshape({4}).slice(0, 0, 3), 1);  // [4, 3]
  Program p = compile(g, {rows, cols});
  p.set("table", {0, 1, 10, 11, 20, 21, 30, 31});
  p.set("idx", std::vector<int32_t>{1, 0, 1, 1});
  p.run();
  EXPECT_EQ(p.get(rows).shape(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(p.get(rows).to_floats(), (std::vector<float>{10, 11, 0, 1, 10, 11, 10, 11}));
  EXPECT_EQ(p.get(cols).shape(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(p.get(cols).to_floats(), (std::vector<float>{1, 0, 1, 11, 10, 11, 21, 20, 21, 31, 30, 31}));
}

TEST(InterpViews, PaddingReadsZeroAndViewsCompose) {
  Graph g;
  Tensor x = g.input("x", {2, 3});
  Tensor y = x.pad({{1, 0}, {0, 2}}).flip(1).permute({1, 0}).contiguous();  // [5, 3]
  Program p = compile(g, {y});
  p.set("x", {1, 2, 3, 4, 5, 6});
  p.run();
  EXPECT_EQ(p.get(y).to_floats(), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 3, 6, 0, 2, 5, 0, 1, 4}));
}

TEST(InterpDynamicDims, OneProgramRunsForAnyBinding) {
  Graph g;
  Expr seq = g.dim("seq");
  Tensor x = g.input("x", {seq, 2});
  Tensor s = (x * 2.0).sum_reduce(0);
  Program p = compile(g, {s});
  for (int64_t n : {1, 3, 7}) {
    Array a(DType::F32, {n, 2});
    for (int64_t i = 0; i < 2 * n; ++i) a.set(i, 1.0);
    p.set("x", a);
    p.run();
    EXPECT_EQ(p.get(s).to_floats(), (std::vector<float>{2.f * n, 2.f * n}));
  }
}

template <typename F>
void expect_run_error(F&& f, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "expected lumen::Error";
  } catch (const Error& e) {
    for (const auto& frag : fragments) EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what();
  }
}

TEST(InterpErrors, InputNotSet) {
  Graph g;
  Tensor x = g.input("x", {2});
  Program p = compile(g, {x.exp2()});
  expect_run_error([&] { p.run(); }, {"input 'x'", "not set"});
}

TEST(InterpErrors, WrongInputSizeAndDtype) {
  Graph g;
  Tensor x = g.input("x", {2, 3});
  Program p = compile(g, {x.exp2()});
  expect_run_error([&] { p.set("x", {1.f, 2.f}); }, {"input 'x'", "[2, 3]", "6 elements", "2 values"});
  expect_run_error([&] { p.set("x", Array(DType::F32, {3, 2})); }, {"[2, 3]", "[3, 2]"});
  expect_run_error([&] { p.set("x", Array(DType::I32, {2, 3})); }, {"f32", "i32"});
  expect_run_error([&] { p.set("y", {1.f}); }, {"no input named 'y'"});
}

TEST(InterpErrors, UnboundAndNegativeDynamicDims) {
  Graph g;
  Expr n = g.dim("n");
  Tensor r = g.iota(loop_index(Shape{n}, 0), {n});
  Program p = compile(g, {r});
  expect_run_error([&] { p.run(); }, {"dynamic dim 'n'", "not bound"});
  expect_run_error([&] { p.bind("n", -1); }, {"'n'", "negative"});
  p.bind("n", 4);
  p.run();
  EXPECT_EQ(p.get(r).to_floats(), (std::vector<float>{0, 1, 2, 3}));
}

TEST(InterpErrors, ConflictingDimsFromTwoInputs) {
  Graph g;
  Expr seq = g.dim("seq");
  Tensor a = g.input("a", {seq}), b = g.input("b", {seq});
  Program p = compile(g, {a + b});
  p.set("a", Array(DType::F32, {3}));
  p.set("b", Array(DType::F32, {4}));
  expect_run_error([&] { p.run(); }, {"'seq'", "4", "3"});
}

TEST(InterpErrors, DimConstraintCheckedWhenBound) {
  Graph g;
  Expr seq = g.dim("seq");
  Tensor x = g.input("x", {seq});
  g.require(ge(seq, Expr(2)), "x needs at least 2 elements");
  Program p = compile(g, {x.slice(0, 0, 2)});
  p.set("x", Array(DType::F32, {1}));
  expect_run_error([&] { p.run(); }, {"at least 2"});
}

TEST(InterpErrors, GatherIndexOutOfRange) {
  Graph g;
  Tensor table = g.input("table", {4, 2});
  Tensor idx = g.input("idx", {2}, DType::I32);
  Program p = compile(g, {table.gather(idx)});
  p.set("table", std::vector<float>(8, 1.f));
  p.set("idx", std::vector<int32_t>{1, 4});
  expect_run_error([&] { p.run(); }, {"gather", "index 4", "size 4"});
  p.set("idx", std::vector<int32_t>{-1, 0});
  expect_run_error([&] { p.run(); }, {"gather", "index -1"});
}

TEST(InterpErrors, GetBeforeRunAndUnknownOutput) {
  Graph g;
  Tensor x = g.input("x", {1});
  Program p = compile(g, {x.exp2()});
  expect_run_error([&] { p.get("out0"); }, {"run() first"});
  expect_run_error([&] { p.get("nope"); }, {"no output named 'nope'"});
}

}  // namespace
}  // namespace lumen
