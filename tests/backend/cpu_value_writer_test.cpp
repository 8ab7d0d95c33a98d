// Tests for lumen/backend/cpu/value_writer: the vector forms it picks for a
// maximum — |x| for max(x, -x), one vmaxps for a max with a number — keep the
// interpreter's answers (NaN, ±inf) on the SIMD path; a remainder by a power
// of two is bitwise and exact.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "lumen/backend/cpu/cpu_backend.h"
#include "lumen/backend/cpu/isa.h"
#include "lumen/compiler/compiler.h"
#include "lumen/compile.h"
#include "lumen/ops/conv.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/math.h"
#include "lumen/ops/reduce.h"
#include "lumen/runtime/compiled_executor.h"
#include "tests/runtime/against_interpreter.h"

namespace lumen {
namespace {

compiler::CompilerOptions no_cache() {
  compiler::CompilerOptions o;
  o.search.use_cache = false;
  return o;
}

// Runs y(x) on the inputs (a multiple of 16: the SIMD path) and returns the output and the source.
std::vector<float> run(const std::function<Tensor(const Tensor&)>& f, const std::vector<float>& in, std::string* source) {
  Graph g;
  Tensor x = g.input("x", {Expr(static_cast<int64_t>(in.size()))});
  Tensor y = f(x);
  compiler::CompileResult r = compiler::compile(g, {y.edge()}, no_cache(), cpu::CpuBackend::shared());
  EXPECT_EQ(r.program.kernels.size(), 1u);
  std::shared_ptr<const backend::Backend> be = cpu::CpuBackend::shared();
  std::vector<std::string> sources = be->render(r.program.kernels, 1);
  *source = sources[0];
  backend::CompileInfo info;
  std::shared_ptr<backend::Module> module = be->compile(sources, &info);
  backend::Entry entry = be->load(*module, r.program.kernels[0].name);
  std::vector<float> out(in.size(), -7.0f), copy = in;
  std::vector<void*> buffers;
  for (NodeId n : r.program.launches[0].buffers) buffers.push_back(n == y.edge().node ? out.data() : copy.data());
  int64_t dims[1] = {0};
  EXPECT_EQ(be->launch(*be->queue(), entry, buffers.data(), dims).failed, 0);
  return out;
}

std::vector<float> inputs() {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> in = {0.0f, -0.0f, inf, -inf, nan, -nan, 1e-40f, -1e-40f, 3.4e38f, -3.4e38f};
  while (in.size() < 64) in.push_back(std::sin(static_cast<float>(in.size())) * 5);
  in[53] = nan;  // in a later vector too
  in[54] = -inf;
  return in;
}

TEST(CpuValueWriter, AbsIsOneAndOnTheSimdPathAndKeepsNaN) {
  std::string source;
  std::vector<float> in = inputs();
  std::vector<float> out = run([](const Tensor& x) { return ops::abs(x); }, in, &source);
  EXPECT_NE(source.find("lumen_absv("), std::string::npos) << source;
  for (size_t i = 0; i < in.size(); ++i) {
    if (std::isnan(in[i])) {
      EXPECT_TRUE(std::isnan(out[i])) << i;
    } else {
      EXPECT_EQ(out[i], std::fabs(in[i])) << i;
    }
  }
}

TEST(CpuValueWriter, MaxWithANumberIsOneVmaxAndKeepsNaN) {
  std::string source;
  std::vector<float> in = inputs();
  for (int order = 0; order < 2; ++order) {
    std::vector<float> out = run(
        [&](const Tensor& x) { return order ? ops::maximum(x.scalar(0.5), x) : ops::maximum(x, x.scalar(0.5)); }, in,
        &source);
    EXPECT_NE(source.find("lumen_max_numberv("), std::string::npos) << source;
    for (size_t i = 0; i < in.size(); ++i) {
      if (std::isnan(in[i])) {
        EXPECT_TRUE(std::isnan(out[i])) << i;
      } else {
        EXPECT_EQ(out[i], std::fmax(in[i], 0.5f)) << i;
      }
    }
  }
}

// Truncated remainder by a power of two in SIMD lanes: one AND for a byte read
// unsigned (a packed quant), |a| & (2^k - 1) with a's sign put back otherwise;
// both exact for every i32, INT32_MIN and INT32_MAX included (casts saturate).
TEST(CpuValueWriter, ModuloByAPowerOfTwoIsBitwiseInLanesAndExact) {
  std::string source;
  std::vector<float> in = {0, 1, -1, 15, -15, 16, -16, 17, -17, 3e9f, -3e9f, 2147483520.0f, -2147483648.0f, 255, -256, 31};
  while (in.size() < 64) in.push_back(std::round(std::sin(static_cast<float>(in.size())) * 1000));
  auto f = [](const Tensor& x) {
    Tensor i = x.cast(DType::I32);
    return i.mod(i.scalar(16)).cast(DType::F32);
  };
  std::vector<float> out = run(f, in, &source);
  EXPECT_NE(source.find("& 15"), std::string::npos) << source;
  for (size_t i = 0; i < in.size(); ++i) {
    double d = in[i];
    int32_t a = d >= 2147483647.0 ? INT32_MAX : d <= -2147483648.0 ? INT32_MIN : static_cast<int32_t>(d);
    EXPECT_EQ(out[i], static_cast<float>(a % 16)) << "element " << i << " = " << in[i];
  }
  auto bytes = [](const Tensor& x) {  // the value range of an unsigned byte: a single AND
    Tensor b = x.cast(DType::U8).cast(DType::I32);
    return b.mod(b.scalar(16)).cast(DType::F32);
  };
  std::vector<float> small(64);
  for (size_t i = 0; i < small.size(); ++i) small[i] = static_cast<float>((i * 37) % 256);
  out = run(bytes, small, &source);
  for (size_t i = 0; i < small.size(); ++i) EXPECT_EQ(out[i], static_cast<float>(static_cast<int>(small[i]) % 16)) << i;
}

// A float whose bounds are known from its parts (a byte scaled by a positive factor: a packed quant's
// high bits, floor(b / 16)) converts to i32 as it is, without lumen_f2iv's saturation and NaN checks,
// and its remainder is a mask; an unbounded float still saturates (above: 3e9 -> INT32_MAX).
TEST(CpuValueWriter, BoundedFloatsConvertWithoutSaturation) {
  std::string source;
  std::vector<float> in(64);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((i * 53 + 7) % 256);
  auto f = [](const Tensor& x) {
    Tensor shifted = x.cast(DType::U8).cast(DType::F32).mul(x.scalar(1.0 / 16)).cast(DType::I32);
    return shifted.mod(shifted.scalar(4)).cast(DType::F32);  // bits 4 and 5
  };
  std::vector<float> out = run(f, in, &source);
  EXPECT_EQ(source.find("= lumen_f2iv("), std::string::npos) << source;  // (the prelude defines it)
  EXPECT_NE(source.find("& 3"), std::string::npos) << source;
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], static_cast<float>((static_cast<int>(in[i]) >> 4) & 3)) << i;
  auto unbounded = [](const Tensor& x) { return x.mul(x.scalar(1.0 / 16)).cast(DType::I32).cast(DType::F32); };
  run(unbounded, in, &source);
  EXPECT_NE(source.find("= lumen_f2iv("), std::string::npos) << source;
}

// f32 rounded to bf16 / f16 (the precision pass's operands) in SIMD lanes:
// the same bits as the scalar rounding (round to nearest even, ties, NaN,
// ±inf, overflow to inf, denormals).
TEST(CpuValueWriter, RoundingToHalfTypesIsInLanesAndMatchesTheScalarRounding) {
  std::vector<float> in = inputs();
  float ties[] = {1.00390625f, 1.01171875f, -1.00390625f, 1.00048828125f, 1.00146484375f, 65520.0f, 3.0e-8f, 70000.0f};
  for (size_t i = 0; i < sizeof ties / sizeof ties[0]; ++i) in[20 + i] = ties[i];
  for (DType d : {DType::BF16, DType::F16}) {
    std::string source;
    std::vector<float> out = run([&](const Tensor& x) { return x.cast(d).cast(DType::F32); }, in, &source);
    EXPECT_NE(source.find(d == DType::BF16 ? "lumen_round_bf16v(" : "lumen_round_f16v("), std::string::npos) << source;
    for (size_t i = 0; i < in.size(); ++i) {
      float want = d == DType::BF16 ? bf16_to_float(float_to_bf16(in[i])) : half_to_float(float_to_half(in[i]));
      if (std::isnan(in[i])) {
        EXPECT_TRUE(std::isnan(out[i])) << dtype_name(d) << " " << i;
      } else {
        EXPECT_EQ(out[i], want) << dtype_name(d) << " element " << i << " = " << in[i];
      }
    }
  }
}

// Runs `program` and the interpreter on `g` with every input filled with sin(step·i + the length of
// its name) and expects output "y" to agree within `tolerance`.
void expect_y_matches_interpreter(const Graph& g, backend::CompiledProgram program,
                                  const std::map<std::string, std::vector<int64_t>>& shapes, double step,
                                  double tolerance) {
  std::map<std::string, Array> in;
  for (const auto& [name, shape] : shapes) {
    Array a(DType::F32, shape);
    for (int64_t i = 0; i < a.numel(); ++i) a.set(i, std::sin(step * static_cast<double>(i) + static_cast<double>(name.size())));
    in.emplace(name, std::move(a));
  }
  Program cpu(std::make_shared<const Graph>(g), g.outputs(), std::make_unique<CompiledExecutor>(std::move(program)));
  auto [got, want] = run_against_interpreter(cpu, g, in, "y");
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got.get(i), want.get(i), tolerance) << i;
}

// A depthwise 3x3 conv with padding 1 over [1, 4, rows, width] at `stride`:
// its kernels' source (past the prelude) must hold `load` and no vector built
// lane by lane, and its result must be the interpreter's.
void expect_depthwise_taps_load_as(int64_t rows, int64_t width, int64_t stride, const std::string& load) {
  Graph g;
  Tensor x = g.input("x", {Expr(1), Expr(4), Expr(rows), Expr(width)}), w = g.input("w", {Expr(4), Expr(1), Expr(3), Expr(3)});
  Tensor y = ops::conv2d(x, w, std::nullopt, {stride, stride}, {1, 1}, {1, 1}, 4);
  g.mark_output(y, "y");
  compiler::CompileResult r = compiler::compile(g, {y.edge()}, no_cache(), cpu::CpuBackend::shared());
  std::string kernels = r.program.source.substr(r.program.source.find("// kernel k"));
  EXPECT_NE(kernels.find(load), std::string::npos) << kernels;
  EXPECT_EQ(kernels.find("lumen_f32v{"), std::string::npos) << "a vector built lane by lane:\n" << kernels;
  Array xs(DType::F32, {1, 4, rows, width}), ws(DType::F32, {4, 1, 3, 3});
  for (int64_t i = 0; i < xs.numel(); ++i) xs.set(i, std::sin(0.3 * static_cast<double>(i)));
  for (int64_t i = 0; i < ws.numel(); ++i) ws.set(i, std::cos(0.7 * static_cast<double>(i)));
  Program cpu(std::make_shared<const Graph>(g), g.outputs(), std::make_unique<CompiledExecutor>(std::move(r.program)));
  auto [got, want] = run_against_interpreter(cpu, g, std::map<std::string, Array>{{"x", xs}, {"w", ws}}, "y");
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got.get(i), want.get(i), 1e-5) << i;
}

// A padded 3x3 window over rows the lanes do not divide (28): the vector
// overhanging the row's end and the padding's validity ("0 < min(w, 27)")
// both clamp; the taps are still whole masked vector loads.
TEST(CpuValueWriter, PaddedWindowsOverUnevenRowsAreMaskedVectorLoads) {
  if (cpu::host_isa().f32_lanes() != 16) GTEST_SKIP() << "checks the 16-lane source";
  expect_depthwise_taps_load_as(6, 28, 1, "lumen_maskload_f32(b1");
}

// A stride-2 padded 3x3 window (mobilenet_v3's first depthwise conv): its
// taps walk the input two elements per lane, so the output row runs in SIMD
// lanes with strided loads (two loads and a permute; the padding's lanes
// masked).
TEST(CpuValueWriter, StrideTwoWindowsAreStridedVectorLoads) {
  if (cpu::host_isa().f32_lanes() != 16) GTEST_SKIP() << "checks the 16-lane source";
  expect_depthwise_taps_load_as(10, 112, 2, "lumen_maskload_f32_strided<2>(b1");
}

// The same over a ReLU of rows of 56 (mobilenet_v3_small's 56² map): 28 outputs a row, so the
// row's last vector overhangs its end, and the padding's mask holds the clamped output index
// (0 < min(w, 27)); the mask is still a lane vector and the taps strided loads, not vectors
// built from 16 scalar loads.
TEST(CpuValueWriter, StrideTwoWindowsOverUnevenRowsAreStridedVectorLoads) {
  if (cpu::host_isa().f32_lanes() != 16) GTEST_SKIP() << "checks the 16-lane source";
  Graph g;
  Tensor x = g.input("x", {Expr(1), Expr(8), Expr(12), Expr(56)}), w = g.input("w", {Expr(8), Expr(1), Expr(3), Expr(3)});
  Tensor y = ops::conv2d(ops::relu(x), w, std::nullopt, {2, 2}, {1, 1}, {1, 1}, 8);
  g.mark_output(y, "y");
  compiler::CompileResult r = compiler::compile(g, {y.edge()}, no_cache(), cpu::CpuBackend::shared());
  std::string kernels = r.program.source.substr(r.program.source.find("// kernel k"));
  EXPECT_NE(kernels.find("lumen_maskload_f32_strided<2>(b1"), std::string::npos) << kernels;
  EXPECT_EQ(kernels.find("lumen_f32v{"), std::string::npos) << "a vector built lane by lane:\n" << kernels;
  expect_y_matches_interpreter(g, std::move(r.program), {{"x", {1, 8, 12, 56}}, {"w", {8, 1, 3, 3}}}, 0.43, 1e-5);
}

// Every third element of each row, plus one: an unmasked stride-3 load (a
// gather) in SIMD lanes; the row's last vector overhangs its end and reads
// nothing past the buffer.
TEST(CpuValueWriter, AStrideThreeViewIsAGatherInLanes) {
  if (cpu::host_isa().f32_lanes() != 16) GTEST_SKIP() << "checks the 16-lane source";
  Graph g;
  Tensor x = g.input("x", {Expr(5), Expr(120)});
  Tensor y = ops::add(x.slice(1, Expr(0), Expr(120), 3), g.constant(1.0, DType::F32));
  g.mark_output(y, "y");
  compiler::CompileResult r = compiler::compile(g, {y.edge()}, no_cache(), cpu::CpuBackend::shared());
  std::string kernels = r.program.source.substr(r.program.source.find("// kernel k"));
  EXPECT_NE(kernels.find("_strided<3>(b1"), std::string::npos) << kernels;
  Array xs(DType::F32, {5, 120});
  for (int64_t i = 0; i < xs.numel(); ++i) xs.set(i, static_cast<double>(i));
  Program cpu(std::make_shared<const Graph>(g), g.outputs(), std::make_unique<CompiledExecutor>(std::move(r.program)));
  auto [got, want] = run_against_interpreter(cpu, g, std::map<std::string, Array>{{"x", xs}}, "y");
  ASSERT_EQ(got.numel(), 5 * 40);
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_EQ(got.get(i), want.get(i)) << i;
}

// A condition every lane shares (the row index past the first rows of a
// cumulative product's scan, the padding rows of a window) joins a lane
// mask as -1 where true: AVX2's masked loads test each lane's sign bit, so a
// splat 1 read nothing there. Run on every ISA (ctest also runs this file
// with LUMEN_ISA=avx2).
TEST(CpuValueWriter, ConditionsSharedByTheLanesAreWholeMasks) {
  Graph g;
  Tensor x = g.input("x", {Expr(7), Expr(9)});
  Tensor c = ops::cumprod(x, 0);
  g.mark_output(c, "c");
  Tensor img = g.input("img", {Expr(1), Expr(8), Expr(14), Expr(14)}), w = g.input("w", {Expr(6), Expr(8), Expr(3), Expr(3)});
  Tensor y = ops::conv2d(img, w, std::nullopt, {1, 1}, {1, 1}, {1, 1}, 1);
  g.mark_output(y, "y");
  compiler::CompileResult r = compiler::compile(g, {c.edge(), y.edge()}, no_cache(), cpu::CpuBackend::shared());
  std::map<std::string, Array> in;
  in.emplace("x", Array(DType::F32, {7, 9}));
  in.emplace("img", Array(DType::F32, {1, 8, 14, 14}));
  in.emplace("w", Array(DType::F32, {6, 8, 3, 3}));
  for (auto& [name, a] : in) {
    for (int64_t i = 0; i < a.numel(); ++i) a.set(i, 1.0 + 0.5 * std::sin(0.37 * static_cast<double>(i) + name.size()));
  }
  Program cpu(std::make_shared<const Graph>(g), g.outputs(), std::make_unique<CompiledExecutor>(std::move(r.program)));
  for (const char* out : {"c", "y"}) {
    auto [got, want] = run_against_interpreter(cpu, g, in, out);
    for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got.get(i), want.get(i), 1e-4 * std::abs(want.get(i)) + 1e-5) << out << " " << i;
  }
}

// mobilenet_v3's second depthwise conv: 3 x 3 / 2 taps over a ReLU of a
// pointwise conv's output, computed inline. The taps read that output
// through a reshape and a padding, whose flat index leaves it at the padding;
// with the coordinates clamped into the padding's mask (View::clamped_index)
// they take no division, and the output row runs in SIMD lanes with strided
// loads. Checked against the interpreter.
TEST(CpuValueWriter, TapsOverAPaddedComputedValueNeedNoDivision) {
  if (cpu::host_isa().f32_lanes() != 16) GTEST_SKIP() << "checks the 16-lane source";
  Graph g;
  Tensor x = g.input("x", {Expr(1), Expr(8), Expr(32), Expr(32)});
  Tensor pw = g.input("pw", {Expr(24), Expr(8), Expr(1), Expr(1)}), dw = g.input("dw", {Expr(24), Expr(1), Expr(3), Expr(3)});
  Tensor h = ops::relu(ops::conv2d(x, pw, std::nullopt, {1, 1}, {0, 0}, {1, 1}, 1));
  Tensor y = ops::conv2d(h, dw, std::nullopt, {2, 2}, {1, 1}, {1, 1}, 24);
  g.mark_output(y, "y");
  compiler::CompileResult r = compiler::compile(g, {y.edge()}, no_cache(), cpu::CpuBackend::shared());
  std::string kernels = r.program.source.substr(r.program.source.find("// kernel k"));
  EXPECT_NE(kernels.find("_strided<2>(b"), std::string::npos) << kernels;
  expect_y_matches_interpreter(g, std::move(r.program),
                               {{"x", {1, 8, 32, 32}}, {"pw", {24, 8, 1, 1}}, {"dw", {24, 1, 3, 3}}}, 0.61, 1e-4);
}

// A row max and a row sum over rows of 256 take reduce lanes of four vectors, each vector its own
// accumulator (four chains, combined pairwise after the loop), where one accumulator chained
// all four: the max of 2048-float rows ran 1.5x faster. A NaN in any vector of a row still
// makes the row's max NaN, -inf rows stay -inf, and the sums match the interpreter.
TEST(CpuValueWriter, ReduceLanesOfFourVectorsKeepFourAccumulators) {
  if (cpu::host_isa().f32_lanes() != 16) GTEST_SKIP() << "checks the 16-lane source";
  Graph g;
  Tensor x = g.input("x", {Expr(6), Expr(256)});
  Tensor m = ops::amax(x, {-1}), s = ops::sum(x, {-1});
  g.mark_output(m, "m");
  g.mark_output(s, "s");
  compiler::CompileResult r = compiler::compile(g, {m.edge(), s.edge()}, no_cache(), cpu::CpuBackend::shared());
  std::string kernels = r.program.source.substr(r.program.source.find("// kernel k"));
  EXPECT_NE(kernels.find("acc0_p3 = lumen_maxv(acc0_p3"), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("lumen_hmax_f32(lumen_maxv(lumen_maxv(acc0_p0, acc0_p1), lumen_maxv(acc0_p2, acc0_p3)))"),
            std::string::npos) << kernels;
  Array xs(DType::F32, {6, 256});
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t i = 0; i < xs.numel(); ++i) xs.set(i, std::sin(0.37 * static_cast<double>(i)) * 5);
  xs.set(1 * 256 + 250, nan);  // in the fourth vector of a step
  xs.set(2 * 256 + 17, nan);   // in the second
  for (int64_t j = 0; j < 256; ++j) xs.set(3 * 256 + j, -inf);
  xs.set(4 * 256 + 200, 1000.0);
  Program cpu(std::make_shared<const Graph>(g), g.outputs(), std::make_unique<CompiledExecutor>(std::move(r.program)));
  auto [got, want] = run_against_interpreter(cpu, g, std::map<std::string, Array>{{"x", xs}}, "m");
  for (int64_t i = 0; i < 6; ++i) {
    if (std::isnan(want.get(i))) {
      EXPECT_TRUE(std::isnan(got.get(i))) << i;
    } else {
      EXPECT_EQ(got.get(i), want.get(i)) << i;
    }
  }
  EXPECT_TRUE(std::isnan(got.get(1)) && std::isnan(got.get(2)));
  EXPECT_EQ(got.get(3), -inf);
  EXPECT_EQ(got.get(4), 1000.0);
  auto [sums, want_sums] = run_against_interpreter(cpu, g, std::map<std::string, Array>{{"x", xs}}, "s");
  for (int64_t i : {0, 4, 5}) EXPECT_NEAR(sums.get(i), want_sums.get(i), 1e-3) << i;
}

// Rows of 40 are two vectors and a masked one. Where the lanes past a row's end still lie inside
// the buffer read (the first five rows of six), they load without a mask (their values are never
// stored); where they would run past its end (all six rows: the last row's overhang), the load
// keeps its mask. Both match the interpreter.
TEST(CpuValueWriter, OverhangingLanesLoadPlainlyOnlyInsideTheBuffer) {
  if (cpu::host_isa().f32_lanes() != 16) GTEST_SKIP() << "checks the 16-lane source";
  for (int64_t rows : {5, 6}) {
    Graph g;
    Tensor x = g.input("x", {Expr(6), Expr(40)});
    Tensor y = ops::add(x.slice(0, Expr(0), Expr(rows)), g.constant(1.0, DType::F32));
    g.mark_output(y, "y");
    compiler::CompileResult r = compiler::compile(g, {y.edge()}, no_cache(), cpu::CpuBackend::shared());
    std::string kernels = r.program.source.substr(r.program.source.find("// kernel k"));
    EXPECT_EQ(kernels.find("lumen_maskload_f32(b1") == std::string::npos, rows == 5) << rows << "\n" << kernels;
    EXPECT_NE(kernels.find("lumen_maskstore_f32(b0"), std::string::npos) << kernels;  // stores keep their masks
    Array xs(DType::F32, {6, 40});
    for (int64_t i = 0; i < xs.numel(); ++i) xs.set(i, std::sin(0.3 * static_cast<double>(i)));
    Program cpu(std::make_shared<const Graph>(g), g.outputs(),
                std::make_unique<CompiledExecutor>(std::move(r.program)));
    auto [got, want] = run_against_interpreter(cpu, g, std::map<std::string, Array>{{"x", xs}}, "y");
    ASSERT_EQ(got.numel(), rows * 40);
    for (int64_t i = 0; i < got.numel(); ++i) EXPECT_EQ(got.get(i), want.get(i)) << i;
  }
}

// A 5 x 5 depthwise conv over 56-wide maps pads its input into a buffer with a spare zero row
// below the windows (ops/conv.cpp), so the taps of a row's last, overhanging vector read inside
// that buffer even on the last row: no masked load in the kernel (on AMD Zen 4 a masked load
// cost twice a plain one, and stopped the compiler from keeping rows in registers), and the
// result matches the interpreter.
TEST(CpuValueWriter, ALargeDepthwiseConvReadsItsPaddedCopyWithoutMasks) {
  if (cpu::host_isa().f32_lanes() != 16) GTEST_SKIP() << "checks the 16-lane source";
  Graph g;
  Tensor x = g.input("x", {Expr(2), Expr(3), Expr(56), Expr(56)});
  Tensor w = g.input("w", {Expr(3), Expr(1), Expr(5), Expr(5)});
  Tensor y = ops::conv2d(x, w, std::nullopt, {1, 1}, {2, 2}, {1, 1}, 3);
  g.mark_output(y, "y");
  compiler::CompileResult r = compiler::compile(g, {y.edge()}, no_cache(), cpu::CpuBackend::shared());
  std::string kernels = r.program.source.substr(r.program.source.find("// kernel k"));
  std::string conv = kernels.substr(kernels.find("SumReduce"));
  conv = conv.substr(0, conv.find("\n}\n", conv.find("extern \"C\" void")));  // its function alone
  EXPECT_EQ(conv.find("lumen_maskload_f32("), std::string::npos) << conv;
  EXPECT_NE(conv.find("lumen_load_f32("), std::string::npos) << conv;
  expect_y_matches_interpreter(g, std::move(r.program), {{"x", {2, 3, 56, 56}}, {"w", {3, 1, 5, 5}}}, 0.37, 1e-4);
}

}  // namespace
}  // namespace lumen
