// The whole-program check (lumen/compiler/confirm_stage.h): a program whose
// schedules differ from the heuristic's is timed whole against the
// heuristic's program and kept only when faster; the decision is remembered
// in the tuning cache. Also the runtime's interleaved program timer.
#include "lumen/compiler/compiler.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "lumen/backend/cpu/cpu_backend.h"
#include "lumen/backend/interp/interpreter.h"
#include "lumen/core/tensor.h"
#include "lumen/compiler/progress.h"
#include "lumen/kernel/fusion.h"
#include "lumen/ops/attention.h"
#include "lumen/runtime/compiled_executor.h"
#include "lumen/runtime/program_timing.h"

namespace lumen {
namespace {

struct Case {
  Graph g;
  std::vector<Edge> outputs;
};

std::unique_ptr<Case> elementwise_case() {
  auto c = std::make_unique<Case>();
  Tensor x = c->g.input("x", {Expr(64), Expr(96)});
  Tensor y = (x * x.scalar(2.0) + x.scalar(1.0)).exp2();
  c->outputs.push_back(y.edge());
  return c;
}

// Plain loops (no actions): not what the heuristic picks for this kernel.
compiler::CompilerOptions plain_schedules(double fake_searched_ms, double fake_heuristic_ms, int* calls,
                                          const std::string& cache_path = "") {
  compiler::CompilerOptions o;
  o.search.budget_s = 1;
  o.search.use_cache = !cache_path.empty();
  o.search.cache_path = cache_path;
  o.choose = [](const Graph&, NodeId, const std::vector<bool>&) { return std::vector<kernel::Action>{}; };
  o.time_programs = [=](const std::vector<const backend::CompiledProgram*>& programs, const Bindings&, double) {
    ++*calls;
    EXPECT_EQ(programs.size(), 2u);
    return std::vector<double>{fake_searched_ms, fake_heuristic_ms};
  };
  return o;
}

std::string heuristic_source(const Case& c) {
  compiler::CompilerOptions o;
  o.search.use_cache = false;
  return compiler::compile(c.g, c.outputs, o, cpu::CpuBackend::shared()).program.source;
}

std::vector<float> run(const backend::CompiledProgram& p, const Array& x) {
  CompiledExecutor e(p);
  return e.execute({{"x", x}}, {})[0].to_floats();
}

Array some_input() {
  std::vector<float> v;
  for (int i = 0; i < 64 * 96; ++i) v.push_back(0.001f * static_cast<float>(i % 97));
  return Array::from_floats(v, {64, 96});
}

TEST(ConfirmStage, ASlowerSearchedProgramGivesWayToTheHeuristicOne) {
  auto c = elementwise_case();
  int calls = 0;
  compiler::CompileResult r = compiler::compile(c->g, c->outputs, plain_schedules(10.0, 5.0, &calls),
                                                cpu::CpuBackend::shared());
  EXPECT_EQ(calls, 1);
  EXPECT_NE(r.program.report.find("kept the heuristic schedules"), std::string::npos) << r.program.report;
  EXPECT_EQ(r.program.source, heuristic_source(*c));
  Array x = some_input();
  std::vector<float> want = interp::Interpreter(c->g).run({{"x", x}}, c->outputs)[0].to_floats();
  std::vector<float> got = run(r.program, x);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * std::abs(want[i])) << i;
}

TEST(ConfirmStage, AFasterSearchedProgramIsKept) {
  auto c = elementwise_case();
  int calls = 0;
  compiler::CompileResult r = compiler::compile(c->g, c->outputs, plain_schedules(5.0, 10.0, &calls),
                                                cpu::CpuBackend::shared());
  EXPECT_EQ(calls, 1);
  EXPECT_NE(r.program.report.find("kept the searched schedules"), std::string::npos) << r.program.report;
  EXPECT_NE(r.program.source, heuristic_source(*c));
}

TEST(ConfirmStage, WithinTheMarginTheHeuristicWins) {
  auto c = elementwise_case();
  int calls = 0;
  compiler::CompileResult r = compiler::compile(c->g, c->outputs, plain_schedules(9.95, 10.0, &calls),
                                                cpu::CpuBackend::shared());
  EXPECT_NE(r.program.report.find("kept the heuristic schedules"), std::string::npos) << r.program.report;
}

TEST(ConfirmStage, TheDecisionIsCachedSoAWarmCompileTimesNothing) {
  auto c = elementwise_case();
  std::string path = std::filesystem::temp_directory_path() / ("lumen_confirm_" + std::to_string(::getpid()) + ".db");
  std::remove(path.c_str());
  int first = 0, second = 0;
  compiler::compile(c->g, c->outputs, plain_schedules(10.0, 5.0, &first, path), cpu::CpuBackend::shared());
  // The second timer would say the opposite: it must not be asked.
  compiler::CompileResult r = compiler::compile(c->g, c->outputs, plain_schedules(1.0, 50.0, &second, path),
                                                cpu::CpuBackend::shared());
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 0);
  EXPECT_NE(r.program.report.find("from the tuning cache): kept the heuristic"), std::string::npos) << r.program.report;
  EXPECT_EQ(r.program.source, heuristic_source(*c));
  std::remove(path.c_str());
}

TEST(ConfirmStage, NoBudgetOrTheHeuristicsOwnSchedulesMeanNoCheck) {
  auto c = elementwise_case();
  int calls = 0;
  compiler::CompilerOptions o = plain_schedules(10.0, 5.0, &calls);
  o.search.budget_s = 0;
  compiler::compile(c->g, c->outputs, o, cpu::CpuBackend::shared());
  compiler::CompilerOptions h = plain_schedules(10.0, 5.0, &calls);
  h.choose = {};  // the search with this budget may keep the heuristic; then nothing is timed ...
  compiler::CompileResult r = compiler::compile(c->g, c->outputs, h, cpu::CpuBackend::shared());
  bool kept_heuristic = r.program.report.find("not needed") != std::string::npos;
  EXPECT_EQ(calls, kept_heuristic ? 0 : 1) << r.program.report;  // ... and otherwise it is timed once
}

// A searched program whose sliced group runs in other chunks than the
// heuristic program's (32 rows against 16), replaced by the heuristic one:
// the result carries the heuristic program's own groups. Before, the
// searched groups were copied over it: its 16-row kernels ran at 32-row
// steps, every other chunk was never computed, and the result was wrong.
TEST(ConfirmStage, AReplacedProgramKeepsItsOwnSlicingChunks) {
  Graph g;
  Shape shape{Expr(1), Expr(2), Expr(96), Expr(16)};
  Tensor q = g.input("q", shape), k = g.input("k", shape), v = g.input("v", shape);
  std::vector<Edge> outputs{ops::scaled_dot_product_attention(q, k, v, std::nullopt, false).edge()};
  int calls = 0;
  compiler::CompilerOptions o = plain_schedules(10.0, 5.0, &calls);
  o.slice.always = true;
  o.slice.chunk = 16;
  o.choose_chunk = [](const kernel::SliceGroup&) { return int64_t{32}; };
  compiler::CompileResult r = compiler::compile(g, outputs, o, cpu::CpuBackend::shared());
  EXPECT_EQ(calls, 1);
  EXPECT_NE(r.program.report.find("kept the heuristic schedules"), std::string::npos) << r.program.report;
  ASSERT_EQ(r.program.groups.size(), 1u);
  EXPECT_EQ(r.program.groups[0].axes.back().chunk, 16);
  std::map<std::string, Array> inputs;
  for (const char* name : {"q", "k", "v"}) {
    std::vector<float> values;
    for (int i = 0; i < 2 * 96 * 16; ++i) values.push_back(std::sin(0.37f * static_cast<float>(i + 7 * name[0])));
    inputs[name] = Array::from_floats(values, {1, 2, 96, 16});
  }
  std::vector<float> want = interp::Interpreter(g).run(inputs, outputs)[0].to_floats();
  std::vector<float> got = CompiledExecutor(r.program).execute(inputs, {})[0].to_floats();
  ASSERT_EQ(got.size(), want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) bad += std::abs(got[i] - want[i]) > 1e-4f ? 1 : 0;
  EXPECT_EQ(bad, 0u) << "of " << got.size() << " elements";
}

TEST(ProgramTiming, TimesProgramsInterleavedOnTheSameInputs) {
  auto c = elementwise_case();
  compiler::CompilerOptions o;
  o.search.use_cache = false;
  backend::CompiledProgram a = compiler::compile(c->g, c->outputs, o, cpu::CpuBackend::shared()).program;
  o.choose = [](const Graph&, NodeId, const std::vector<bool>&) { return std::vector<kernel::Action>{}; };
  backend::CompiledProgram b = compiler::compile(c->g, c->outputs, o, cpu::CpuBackend::shared()).program;
  ProgramTimes t = time_programs({&a, &b}, {}, 0.05);
  ASSERT_EQ(t.median_ms.size(), 2u);
  EXPECT_GT(t.median_ms[0], 0.0);
  EXPECT_GT(t.median_ms[1], 0.0);
  EXPECT_GE(t.rounds, 3);
  EXPECT_LE(t.rounds, 25);
}

// The search reads weights warm exactly when the program's parameters fit in
// the share of the last-level cache the compiler allows them.
bool warm_with_l3(int64_t l3_bytes) {
  Graph g;
  Tensor x = g.input("x", {Expr(1), Expr(256)});
  Tensor w = g.parameter("w", {Expr(256), Expr(256)});  // 256 KiB
  Tensor y = x.matmul(w.transpose(0, 1));
  compiler::Pipeline p;
  p.graph = std::make_shared<Graph>(g);
  p.outputs = {y.edge()};
  p.needed.assign(p.graph->size(), true);
  kernel::Partition part = kernel::partition(*p.graph, p.outputs);
  p.materialized = part.materialized;
  p.kernel_nodes = part.kernels;
  p.l3_bytes = l3_bytes;
  search::SearchOptions o;
  o.use_cache = false;
  EXPECT_EQ(compiler::parameter_bytes(*p.graph, p.needed, o), 256 * 256 * 4);
  compiler::ProgressLine quiet(false, false);
  compiler::choose_schedules(p, o, {}, quiet);
  return p.search_report.parameters_warm;
}

TEST(ScheduleStage, WeightsAreReadWarmOnlyWhenAllParametersFitTheLastLevelCache) {
  EXPECT_TRUE(warm_with_l3(1 << 20));
  EXPECT_FALSE(warm_with_l3(256 << 10));  // 256 KiB > 0.75 * 256 KiB
  EXPECT_FALSE(warm_with_l3(0));          // unknown cache: cold, as before
}

}  // namespace
}  // namespace lumen
