// The compiler's graph-level stage: skipped at budget 0; with a budget it
// measures extracted programs, keeps the fastest verified one (never an
// unverified one), reports rules, candidates, times and the winner, and a
// warm compile takes the choice from the tuning cache without measuring.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#include "lumen/backend/cpu/cpu_backend.h"
#include "lumen/compile.h"
#include "lumen/compiler/graph_search.h"
#include "lumen/egraph/graph_hash.h"
#include "lumen/models/llama.h"
#include "lumen/ops/ops.h"
#include "tests/egraph/egraph_test_util.h"

namespace lumen::compiler {
namespace {

using egraph::testing::evaluate;
using egraph::testing::expect_same;
using egraph::testing::random_inputs;

std::string fresh_db(const std::string& name) {
  std::string path = ::testing::TempDir() + "/lumen_graph_search_" + name + "_" + std::to_string(getpid()) + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

Graph attention() {
  Graph g;
  Shape s{Expr(1), Expr(2), Expr(40), Expr(8)};
  g.mark_output(ops::scaled_dot_product_attention(g.input("q", s), g.input("k", s), g.input("v", s)), "out");
  return g;
}

std::vector<Edge> outputs_of(const Graph& g) {
  std::vector<Edge> e;
  for (const NamedOutput& o : g.outputs()) e.push_back(o.edge);
  return e;
}

TEST(GraphSearch, BudgetZeroSkipsTheStage) {
  Graph g = attention();
  CompilerOptions options;
  options.search.use_cache = false;
  int calls = 0;
  options.time_programs = [&](const std::vector<const backend::CompiledProgram*>& p, const Bindings&, double) {
    ++calls;
    return std::vector<double>(p.size(), 1.0);
  };
  GraphSearchReport report;
  CompileResult r = compile_with_graph_search(g, outputs_of(g), options, cpu::CpuBackend::shared(),
                                              [&](const backend::CompiledProgram&) { ++calls; }, {}, &report);
  EXPECT_FALSE(report.ran);
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(report.candidates.empty());
  EXPECT_EQ(r.program.stats.count("graph_candidates"), 0u);
  EXPECT_EQ(r.program.report.find("graph search"), std::string::npos);
}

// The timer decides among verified programs; one the check rejects never
// wins, even when it would be the fastest.
TEST(GraphSearch, FastestVerifiedCandidateWinsAndRejectedOnesNever) {
  Graph g = attention();
  auto inputs = random_inputs(g, 2);
  auto want = evaluate(g, inputs);
  for (bool reject_others : {false, true}) {
    CompilerOptions options;
    options.search.budget_s = 0.01;
    options.search.use_cache = false;
    // Program k of a timing round takes 10 - k ms: the original (first) is the slowest.
    options.time_programs = [](const std::vector<const backend::CompiledProgram*>& p, const Bindings&, double) {
      std::vector<double> ms;
      for (size_t k = 0; k < p.size(); ++k) ms.push_back(10.0 - static_cast<double>(k));
      return ms;
    };
    GraphSearchReport report;
    int call = 0;
    auto check = [&](const backend::CompiledProgram&) {
      if (call++ > 0 && reject_others) fail("disagrees with the interpreter (test)");
    };
    CompileResult r = compile_with_graph_search(g, outputs_of(g), options, cpu::CpuBackend::shared(), check, {}, &report);
    ASSERT_TRUE(report.ran);
    ASSERT_GE(report.candidates.size(), 2u) << report.to_string();
    EXPECT_TRUE(report.candidates[0].original);
    ASSERT_GE(report.winner, 0);
    const GraphCandidateReport& w = report.candidates[static_cast<size_t>(report.winner)];
    if (reject_others) {
      EXPECT_TRUE(w.original) << report.to_string();
      EXPECT_NE(report.candidates[1].rejected, "") << "the first rewrite is always checked";
      for (size_t i = 1; i < report.candidates.size(); ++i) {
        EXPECT_TRUE(!report.candidates[i].rejected.empty() || !report.candidates[i].skipped.empty());
        EXPECT_LT(report.candidates[i].ms, 0.0) << "a rejected or skipped candidate is never timed";
      }
    } else {
      int fastest = 0;  // among those timed (a tiny budget may leave some untimed)
      for (size_t i = 0; i < report.candidates.size(); ++i) {
        if (report.candidates[i].ms >= 0 && report.candidates[i].ms < report.candidates[static_cast<size_t>(fastest)].ms) {
          fastest = static_cast<int>(i);
        }
      }
      EXPECT_EQ(report.winner, fastest) << report.to_string();
      EXPECT_GE(report.candidates[1].ms, 0.0) << "the original and one rewrite are always timed";
      EXPECT_FALSE(w.original);
    }
    EXPECT_NE(r.program.report.find("graph search: measured"), std::string::npos);
    EXPECT_NE(r.program.report.find("rules fired"), std::string::npos) << r.program.report;
    EXPECT_NE(r.program.report.find("* candidate"), std::string::npos) << r.program.report;
    // Whatever won computes what the original does (the compiled program's own graph).
    expect_same(want, evaluate(*r.program.graph, inputs), 1e-4, 1e-6, "winner graph");
  }
}

// Whatever goes wrong inside the stage, the compile still succeeds with the original.
TEST(GraphSearch, AFailingStageKeepsTheOriginal) {
  Graph g = attention();
  CompilerOptions options;
  options.search.budget_s = 0.01;
  options.search.use_cache = false;
  GraphSearchReport report;
  options.time_programs = [](const std::vector<const backend::CompiledProgram*>& p, const Bindings&, double) {
    return std::vector<double>(p.size(), 1.0);
  };
  auto check = [](const backend::CompiledProgram&) { throw std::runtime_error("rig exploded (test)"); };
  CompileResult r = compile_with_graph_search(g, outputs_of(g), options, cpu::CpuBackend::shared(), check, {}, &report);
  EXPECT_EQ(report.winner, -1);
  EXPECT_NE(report.note.find("graph search failed, kept the original: rig exploded (test)"), std::string::npos) << report.note;
  EXPECT_EQ(r.program.stats.at("graph_winner_original"), 1.0);
  auto inputs = random_inputs(g, 1);
  expect_same(evaluate(g, inputs), evaluate(*r.program.graph, inputs), 0, 0, "the original, as compiled");
}

TEST(GraphSearch, CompileMeasuresOnceThenTheCacheAnswers) {
  Graph g = attention();
  CompileOptions options;
  options.search_budget_s = 1.0;
  // A first compile into a throwaway tuning cache builds the candidates' kernels (the object cache):
  // compiling them cold under a loaded ctest took 1.6 s, the whole budget, so the cold compile below
  // searched no schedules and the warm one had them to time.
  options.cache_path = fresh_db("prime");
  compile(g, {}, options);
  fresh_db("prime");  // removed
  options.cache_path = fresh_db("warm");
  Program cold = compile(g, {}, options);
  std::string report = cold.report();
  std::printf("%s", report.c_str());
  EXPECT_NE(report.find("graph search: measured"), std::string::npos) << report;
  EXPECT_NE(report.find(" ms\n"), std::string::npos) << "each candidate's measured time is reported:\n" << report;
  EXPECT_GE(cold.stats().at("graph_candidates"), 2.0);
  auto inputs = random_inputs(g, 9);
  auto want = evaluate(g, inputs);
  for (const auto& [name, a] : inputs) cold.set(name, a);
  cold.run();
  expect_same(want, {cold.get("out")}, 2e-3, 1e-4, "the chosen program");

  Program warm = compile(g, {}, options);
  EXPECT_NE(warm.report().find("choice from the tuning cache (nothing measured)"), std::string::npos) << warm.report();
  EXPECT_EQ(warm.stats().at("search_timing_runs"), 0.0);
  for (const auto& [name, a] : inputs) warm.set(name, a);
  warm.run();
  expect_same(want, {warm.get("out")}, 2e-3, 1e-4, "the warm program");
  std::remove(options.cache_path.c_str());
}

// A small Llama (KV-cache state, GQA, RoPE, causal mask): the searched
// program matches the interpreter, state included, and a warm compile
// measures nothing.
TEST(GraphSearch, LlamaWarmCompileDoesNoTiming) {
  models::LlamaConfig c;
  c.vocab = 8;
  c.dim = 16;
  c.layers = 1;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_dim = 4;
  c.hidden = 24;
  Graph g;
  models::Llama model(g, c);
  Tensor tokens = g.input("tokens", {Expr(1), Expr(5)}, DType::I32);
  g.mark_output(model.step(tokens, Expr(2), 8), "logits");
  CompileOptions options;
  options.search_budget_s = 0.3;
  options.cache_path = fresh_db("llama");
  Program cold = compile(g, {}, options);
  std::printf("%s", cold.report().c_str());
  EXPECT_NE(cold.report().find("graph search: measured"), std::string::npos) << cold.report();
  auto inputs = random_inputs(g, 5);
  auto want = evaluate(g, inputs);  // logits, then the two cache updates
  for (const auto& [name, a] : inputs) cold.set(name, a);
  cold.run();
  expect_same({want[0]}, {cold.get("logits")}, 2e-3, 1e-4, "llama logits");
  Program warm = compile(g, {}, options);
  EXPECT_NE(warm.report().find("choice from the tuning cache (nothing measured)"), std::string::npos) << warm.report();
  EXPECT_EQ(warm.stats().at("search_timing_runs"), 0.0);
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((options.cache_path + suffix).c_str());
}

}  // namespace
}  // namespace lumen::compiler
