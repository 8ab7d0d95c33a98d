// Tests for lumen/search/search.h: the search finds verified schedules,
// rejects a wrong candidate, and a warm tuning cache means no timing at all.
#include <gtest/gtest.h>
#include <cmath>
#include <unistd.h>

#include "lumen/kernel/fusion.h"
#include "lumen/kernel/printer.h"
#include "lumen/kernel/schedule_space.h"
#include "lumen/lumen.h"
#include "lumen/search/search.h"

namespace lumen {
namespace {

std::string fresh_db(const std::string& name) {
  std::string path = testing::TempDir() + "/lumen_search_" + name + "_" + std::to_string(getpid()) + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

Graph matmul_graph(Tensor* out) {
  Graph g;
  Tensor a = g.input("a", {64, 128}), b = g.input("b", {128, 96});
  *out = ops::relu(a.matmul(b));
  return g;
}

TEST(Search, FindsAVerifiedScheduleAndAWarmCacheSkipsTiming) {
  std::string db = fresh_db("warm");
  Tensor y;
  Graph g = matmul_graph(&y);
  CompileOptions options;
  options.search_budget_s = 3;
  options.cache_path = db;
  Program first = compile(g, {y}, options);
  auto s1 = first.stats();
  EXPECT_GT(s1["search_timing_runs"], 0);
  EXPECT_EQ(s1["search_cache_hits"], 0);

  Program second = compile(g, {y}, options);
  auto s2 = second.stats();
  EXPECT_EQ(s2["search_timing_runs"], 0) << second.report();  // no timing runs at all
  // Every searched kernel answers from the cache; a pack of B (an input, packed each run for a
  // tile) is a kernel with no schedule to search.
  EXPECT_GE(s2["search_cache_hits"], 1);
  EXPECT_LE(s2["search_cache_hits"], s1["kernels"]);
  EXPECT_LT(second.compile_seconds, 1.0);

  // Both programs compute the same (correct) result.
  Program reference = compile(g, {y}, {Backend::Interp});
  std::vector<float> a(64 * 128), b(128 * 96);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 37) % 17) * 0.1f - 0.8f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 11) % 13) * 0.1f - 0.6f;
  for (Program* p : {&first, &second, &reference}) {
    p->set("a", a);
    p->set("b", b);
    p->run();
  }
  for (int64_t i = 0; i < reference.get(y).numel(); ++i) {
    ASSERT_NEAR(first.get(y).get(i), reference.get(y).get(i), 1e-3);
    ASSERT_NEAR(second.get(y).get(i), reference.get(y).get(i), 1e-3);
  }
}

TEST(Search, AWrongCandidateIsRejectedByVerification) {
  Tensor y;
  Graph g = matmul_graph(&y);
  auto p = kernel::partition(g, {y.edge()});
  search::SearchOptions options;
  options.use_cache = false;
  int tampered = 0;
  // Every candidate that unrolls its rows (a "fast" schedule) gets a bug: its
  // stored value is scaled by 1.5. Verification must reject all of them.
  options.tamper = [&](kernel::LoweredKernel& k) {
    std::function<bool(kernel::Block&)> corrupt = [&](kernel::Block& block) {
      for (kernel::Stmt& s : block) {
        if (s.kind == kernel::StmtKind::Loop && corrupt(s.body)) return true;
        if (s.kind == kernel::StmtKind::Store) {
          s.value = kernel::binary(Op::Mul, s.value, kernel::number(1.5, s.value->dtype));
          return true;
        }
      }
      return false;
    };
    if (kernel::to_string(k.kernel).find("unroll") == std::string::npos) return false;
    ++tampered;
    return corrupt(k.kernel.body);
  };
  search::ScheduleSearch search(g, p.materialized, options, {16, 2});
  NodeId node = p.kernels.back();
  std::vector<kernel::Action> chosen = search.choose(node, 3.0);
  const search::KernelReport& rep = search.report().kernels.back();
  ASSERT_GT(tampered, 0) << "the search never tried a row-unrolled schedule";
  EXPECT_GE(rep.rejected, tampered);
  ASSERT_FALSE(rep.rejections.empty());
  EXPECT_NE(rep.rejections[0].find("reference"), std::string::npos) << rep.rejections[0];
  // The winner is one the tamper left alone: the heuristic's seed (never tampered; with the ReLU
  // ending the matmul's epilogue it is a tile, unrolled), or a neighbour that unrolls nothing.
  kernel::KernelFacts facts = kernel::kernel_facts(g, node, p.materialized, kernel::Target{16, 2});
  std::string seed = kernel::to_string(kernel::knob_actions(facts, kernel::traced_heuristic_knobs(g, facts)));
  if (kernel::to_string(chosen) != seed) {
    kernel::Schedule won = kernel::Schedule::from_actions(g.node(node).shape, chosen);
    std::string text = kernel::to_string(kernel::lower(g, node, p.materialized, won, "k").kernel);
    EXPECT_EQ(text.find("unroll"), std::string::npos) << "a tampered schedule won: " << kernel::to_string(chosen);
  }
}

TEST(Search, BudgetZeroUsesTheHeuristicWithoutTiming) {
  Tensor y;
  Graph g = matmul_graph(&y);
  CompileOptions options;
  options.tuning_cache = false;
  Program p = compile(g, {y}, options);
  EXPECT_EQ(p.stats()["search_timing_runs"], 0);
  EXPECT_NE(p.report().find("heuristic"), std::string::npos) << p.report();
}

}  // namespace
}  // namespace lumen

namespace lumen {
namespace {

// A softmax over causally masked scores reads only the unmasked part of its
// materialised input (kernel/known_region.h); the rig's input holds -inf in
// the masked part as the program's does, so the heuristic schedule agrees with
// the reference and the kernel is searched instead of skipped.
TEST(Search, KernelsReadingOnlyTheLiveRegionOfAMaskedInputAreSearched) {
  Graph g;
  const int64_t s = 256;
  Tensor q = g.input("q", {4, s, 32}), k = g.input("k", {4, s, 32}), v = g.input("v", {4, s, 32});
  // As users write it: where(col > row, -inf, scores) over arange.
  Tensor scores = q.matmul(k.transpose(1, 2));
  Tensor row = ops::arange(g, 0, s, 1, DType::I32).unsqueeze(1), col = ops::arange(g, 0, s, 1, DType::I32).unsqueeze(0);
  Tensor masked = ops::where(ops::gt(col, row), ops::full(g, {1}, -INFINITY), scores);
  Tensor y = ops::softmax(masked, -1).matmul(v);
  auto p = kernel::partition(g, {y.edge()});
  search::SearchOptions options;
  options.use_cache = false;
  search::ScheduleSearch search(g, p.materialized, options, {16, 2});
  for (NodeId n : p.kernels) search.choose(n, 0.3);
  std::string warnings;
  for (const std::string& w : search.report().warnings) warnings += w + "\n";
  EXPECT_EQ(warnings.find("disagrees with the reference"), std::string::npos) << warnings;
  for (const search::KernelReport& r : search.report().kernels) EXPECT_GT(r.best_ms, 0) << "node " << r.node << " not timed";
}

}  // namespace
}  // namespace lumen
