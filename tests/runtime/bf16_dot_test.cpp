// The bf16 pair dot product path (schedule action pair_dot, the CPU's
// vdpbf16ps): bf16 GEMMs scheduled with it agree with the interpreter; the
// schedule space offers it only on a target with a bf16 dot product; the
// fallback (LUMEN_ISA=avx512 hides AVX512-BF16: the test binary runs again
// under it) takes the f32 path and says so in the report; misuse is an Error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "lumen/backend/cpu/cpu_backend.h"
#include "lumen/backend/cpu/isa.h"
#include "lumen/compile.h"
#include "lumen/compiler/compiler.h"
#include "lumen/core/tensor.h"
#include "lumen/kernel/lower.h"
#include "lumen/kernel/schedule_space.h"
#include "lumen/ops/linalg.h"
#include "lumen/runtime/compiled_executor.h"
#include "tests/runtime/against_interpreter.h"

namespace lumen {
namespace {

bool isa_limited() {
  const char* v = std::getenv("LUMEN_ISA");
  return v && std::strcmp(v, "avx512") == 0;
}

// C = A·B over bf16 inputs, summed in f32: A [batch.., m, k], B [batch.., k, n] (or [n, k] transposed).
struct Gemm {
  Graph g;
  std::vector<std::pair<std::string, Array>> inputs;
  Gemm(Shape batch, int64_t m, int64_t k, int64_t n, bool transposed) {
    Shape as = batch, bs = batch;
    as.insert(as.end(), {Expr(m), Expr(k)});
    Shape last = transposed ? Shape{Expr(n), Expr(k)} : Shape{Expr(k), Expr(n)};
    bs.insert(bs.end(), last.begin(), last.end());
    Tensor a = g.input("a", as, DType::BF16);
    Tensor b = g.input("b", bs, DType::BF16);
    Tensor bf = b.cast(DType::F32);
    int r = static_cast<int>(bs.size());
    if (transposed) bf = bf.transpose(r - 2, r - 1);
    g.mark_output(ops::matmul(a.cast(DType::F32), bf), "y");
    for (const auto& [name, shape] : {std::make_pair("a", as), std::make_pair("b", bs)}) {
      std::vector<int64_t> dims;
      for (const Expr& d : shape) dims.push_back(d.value());
      Array x(DType::BF16, dims);
      for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::sin(0.7 * static_cast<double>(i) + name[0]) * 2);
      inputs.emplace_back(name, x);
    }
  }
};

struct GemmRun {
  std::string source, report;
  double worst = 0;  // largest |cpu - interp| / (1 + |interp|)
};

// Compiles the GEMM on the CPU with each kernel's schedule from `pick`, runs it against the interpreter.
GemmRun run(Gemm& c, const std::function<kernel::Knobs(const kernel::KernelFacts&)>& pick, bool bf16_dot) {
  kernel::Target target{cpu::host_isa().f32_lanes(), 2, false, bf16_dot};
  compiler::CompilerOptions options;
  options.search.use_cache = false;
  options.choose = [&](const Graph& g, NodeId n, const std::vector<bool>& materialized) {
    kernel::KernelFacts f = kernel::kernel_facts(g, n, materialized, target);
    return kernel::knob_actions(f, pick(f));
  };
  std::vector<NamedOutput> named = c.g.outputs();
  std::vector<Edge> edges{named[0].edge};
  auto shared = std::make_shared<const Graph>(c.g);
  compiler::CompileResult r = compiler::compile(*shared, edges, options, cpu::CpuBackend::shared());
  GemmRun out;
  out.source = r.program.source;
  out.report = r.program.report;
  Program cpu(shared, named, std::make_unique<CompiledExecutor>(std::move(r.program)));
  auto [got, want] = run_against_interpreter(cpu, c.g, c.inputs, "y");
  EXPECT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i) {
    out.worst = std::max(out.worst, std::fabs(got.get(i) - want.get(i)) / (1 + std::fabs(want.get(i))));
  }
  return out;
}

kernel::Knobs heuristic(const kernel::KernelFacts& f) { return kernel::heuristic_knobs(f); }

// Products of bf16 values are exact in f32; only the order of the f32 sums differs.
constexpr double kTolerance = 2e-5;

void expect_pair_path(Gemm c, const char* what) {
  GemmRun pairs = run(c, heuristic, true);
  EXPECT_NE(pairs.source.find("= lumen_dot_bf16_pairs(acc"), std::string::npos) << what;
  EXPECT_NE(pairs.report.find("1 of 1 kernels on the bf16 pair dot path"), std::string::npos) << pairs.report;
  EXPECT_LT(pairs.worst, kTolerance) << what;
  GemmRun plain = run(c, heuristic, false);
  EXPECT_EQ(plain.source.find("= lumen_dot_bf16_pairs(acc"), std::string::npos) << what;
  EXPECT_NE(plain.report.find("f32 FMA fallback"), std::string::npos) << plain.report;
  EXPECT_LT(plain.worst, kTolerance) << what;
}

TEST(Bf16Dot, GemmOnThePairPathMatchesTheInterpreter) {
  if (cpu::host_isa().f32_lanes() != 16) GTEST_SKIP() << "needs AVX-512 (the pair path is written for 16 lanes)";
  expect_pair_path(Gemm({}, 50, 66, 64, false), "row-major B");
  expect_pair_path(Gemm({}, 9, 130, 48, true), "transposed B (weights)");
  expect_pair_path(Gemm({Expr(2)}, 9, 34, 64, false), "batched");
}

// Every neighbour of the pair path's heuristic point the search may try
// (other tiles, m blocks, loop orders, the f32 path, no pack, row schedules)
// lowers to a kernel that agrees with the interpreter.
TEST(Bf16Dot, EveryNeighbourOfThePairPathAgreesWithTheInterpreter) {
  if (cpu::host_isa().f32_lanes() != 16) GTEST_SKIP() << "needs AVX-512 (the pair path is written for 16 lanes)";
  Gemm c({}, 50, 66, 64, false);
  size_t tried = 0, pairs = 0;
  for (size_t i = 0; i < 64; ++i) {
    bool exists = false, legal = true;
    auto pick = [&](const kernel::KernelFacts& f) {
      std::vector<kernel::Knobs> all = kernel::neighbours(f, kernel::heuristic_knobs(f));
      exists = i < all.size();
      kernel::Knobs k = exists ? all[i] : kernel::heuristic_knobs(f);
      try {
        kernel::knob_actions(f, k);
      } catch (const Error&) {
        legal = false;  // an illegal point: the search prunes it
        k = kernel::heuristic_knobs(f);
      }
      pairs += exists && legal && k.pair_dot ? 1 : 0;
      return k;
    };
    GemmRun r = run(c, pick, true);
    if (!exists) break;
    if (!legal) continue;
    ++tried;
    EXPECT_LT(r.worst, kTolerance) << "neighbour " << i;
  }
  EXPECT_GT(tried, 10u);
  EXPECT_GT(pairs, 5u);  // most neighbours keep the pairs (other tiles and orders)
}

TEST(Bf16Dot, TheSpaceOffersPairsOnlyWithABf16DotProduct) {
  Gemm c({}, 12, 64, 64, false);
  NodeId out = c.g.outputs()[0].edge.node;
  std::vector<bool> materialized(c.g.size(), false);
  for (size_t i = 0; i < c.g.size(); ++i) materialized[i] = c.g.nodes()[i].op == Op::Input;
  materialized[static_cast<size_t>(out)] = true;
  kernel::KernelFacts with = kernel::kernel_facts(c.g, out, materialized, kernel::Target{16, 2, false, true});
  kernel::KernelFacts without = kernel::kernel_facts(c.g, out, materialized, kernel::Target{16, 2, false, false});
  EXPECT_TRUE(with.pair_dot);
  EXPECT_FALSE(without.pair_dot);
  kernel::Knobs k = kernel::heuristic_knobs(with);
  EXPECT_TRUE(k.pair_dot && k.pack);
  EXPECT_FALSE(kernel::heuristic_knobs(without).pair_dot);
  // The search measures both: the f32 path is a neighbour of the pair path.
  bool f32_neighbour = false;
  for (const kernel::Knobs& n : kernel::neighbours(with, k)) f32_neighbour |= !n.pair_dot && n.pack && n.nr == k.nr && n.mr == k.mr;
  EXPECT_TRUE(f32_neighbour);
  for (const kernel::Knobs& n : kernel::neighbours(without, kernel::heuristic_knobs(without))) EXPECT_FALSE(n.pair_dot);
  // The action replays from text (the tuning cache stores it so).
  std::vector<kernel::Action> actions = kernel::knob_actions(with, k);
  EXPECT_EQ(kernel::parse_actions(kernel::to_string(actions)), actions);
  EXPECT_NE(kernel::to_string(actions).find("pair_dot("), std::string::npos);
  // A point with pairs on a target without them is illegal.
  EXPECT_THROW(kernel::knob_actions(without, k), Error);
}

TEST(Bf16Dot, PairDotNeedsBf16OperandsAPackAndAnEvenK) {
  EXPECT_THROW(kernel::Schedule({Expr(4), Expr(16)}).apply(kernel::Action::pair_dot(1)), Error);  // no pack
  auto lower_with_pairs = [](Graph& g) {
    NodeId out = g.outputs()[0].edge.node;
    std::vector<bool> materialized(g.size(), false);
    for (size_t i = 0; i < g.size(); ++i) materialized[i] = g.nodes()[i].op == Op::Input;
    materialized[static_cast<size_t>(out)] = true;
    kernel::Schedule s(g.node(out).shape);
    s.apply(kernel::Action::pack(1, 16));
    s.apply(kernel::Action::pair_dot(1));
    kernel::lower(g, out, materialized, s, "k");
  };
  Graph f32;
  Tensor a = f32.input("a", {Expr(4), Expr(8)}), b = f32.input("b", {Expr(8), Expr(16)});
  f32.mark_output(ops::matmul(a, b), "y");
  try {
    lower_with_pairs(f32);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pair_dot needs a product of two bf16 values"), std::string::npos) << e.what();
  }
  Graph odd;
  Tensor c = odd.input("a", {Expr(4), Expr(7)}, DType::BF16), d = odd.input("b", {Expr(7), Expr(16)}, DType::BF16);
  odd.mark_output(ops::matmul(c.cast(DType::F32), d.cast(DType::F32)), "y");
  try {
    lower_with_pairs(odd);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("even reduction extent"), std::string::npos) << e.what();
  }
}

// The whole pipeline with the precision pass, on whatever this CPU is: with
// AVX512-BF16 the bf16 kernels take the pair path, without (or under
// LUMEN_ISA=avx512) the f32 fallback; the report says which, and the result
// is the same either way.
TEST(Bf16Dot, CompiledBf16ModelUsesWhatTheCpuHas) {
  Graph g;
  const int64_t m = 24, k = 96, n = 64;
  Tensor x = g.input("x", {Expr(m), Expr(k)});
  Tensor w = g.parameter("w", {Expr(k), Expr(n)});
  g.mark_output(ops::matmul(x, w), "y");
  Array xa(DType::F32, {m, k}), wa(DType::F32, {k, n});
  for (int64_t i = 0; i < m * k; ++i) xa.set(i, std::sin(0.3 * static_cast<double>(i)));
  for (int64_t i = 0; i < k * n; ++i) wa.set(i, std::cos(0.17 * static_cast<double>(i)));
  CompileOptions o;
  o.tuning_cache = false;
  o.precision = DType::BF16;
  Program p = compile(g, {}, o);
  o.backend = Backend::Interp;
  Program ref = compile(g, {}, o);
  for (Program* q : {&p, &ref}) {
    q->set("x", xa);
    q->set("w", wa);
    q->run();
  }
  for (int64_t i = 0; i < m * n; ++i) {
    EXPECT_NEAR(p.get("y").get(i), ref.get("y").get(i), kTolerance * (1 + std::fabs(ref.get("y").get(i)))) << i;
  }
  std::string report = p.report();
  EXPECT_NE(report.find("precision bf16: 1 contraction"), std::string::npos) << report;
  bool pairs = cpu::host_isa().avx512_bf16;
  if (isa_limited()) {
    EXPECT_FALSE(pairs) << "LUMEN_ISA=avx512 must hide AVX512-BF16";
  }
  EXPECT_EQ(cpu::host_isa().features().find("avx512_bf16") != std::string::npos, pairs);
  // The feature set is part of every cache key (tuning: the device fingerprint; objects: the flags).
  EXPECT_EQ(cpu::CpuBackend::shared()->fingerprint().find("avx512_bf16") != std::string::npos, pairs);
  EXPECT_EQ(cpu::host_isa().compiler_flags().find("-mavx512bf16") != std::string::npos, pairs);
  EXPECT_NE(report.find(pairs ? "1 of 1 kernels on the bf16 pair dot path" : "f32 FMA fallback"), std::string::npos)
      << report;
}

}  // namespace
}  // namespace lumen
