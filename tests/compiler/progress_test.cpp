// Tests for lumen/compiler/progress.h (the live progress line and the
// summary) and for the search's countdown, which must never go below zero.
#include "lumen/compiler/progress.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "lumen/kernel/fusion.h"
#include "lumen/lumen.h"
#include "lumen/search/search.h"

namespace lumen {
namespace {

using compiler::CompileSummary;
using compiler::ProgressCounts;

TEST(Progress, ShowsKernelsDoneOfTotalAndSearchTimeOfTheBudget) {
  ProgressCounts c;
  c.kernels_done = 12;
  c.kernels_total = 40;
  c.search_seconds = 3.25;
  c.search_budget_s = 20;
  EXPECT_EQ(compiler::format_progress(c), "[lumen] scheduling kernel 12/40, search 3.2 s of 20.0 s");
  c.detail = "node 7: 3 tried";
  EXPECT_EQ(compiler::format_progress(c), "[lumen] scheduling kernel 12/40, search 3.2 s of 20.0 s | node 7: 3 tried");
  c.search_budget_s = 0;  // no search: no search figure
  c.detail.clear();
  EXPECT_EQ(compiler::format_progress(c), "[lumen] scheduling kernel 12/40");
  c.stage = "compiling";
  EXPECT_EQ(compiler::format_progress(c), "[lumen] compiling 40 kernels");
}

TEST(Progress, CountsAndTimesNeverShowBelowZeroOrPastTheTotal) {
  ProgressCounts c;
  c.kernels_done = 45;
  c.kernels_total = 40;
  c.search_seconds = -0.5;
  c.search_budget_s = 2;
  EXPECT_EQ(compiler::format_progress(c), "[lumen] scheduling kernel 40/40, search 0.0 s of 2.0 s");
  c.kernels_done = -1;
  EXPECT_EQ(compiler::format_progress(c).find("-"), std::string::npos) << compiler::format_progress(c);
  // A search that overran its share shows 0 s left, not a negative countdown.
  EXPECT_EQ(compiler::format_candidate(17, 12, 1, 1.314, -3.7), "node 17: 12 tried, 1 rejected, best x1.31, 0 s left");
  EXPECT_EQ(compiler::format_candidate(17, 12, 1, 1.0, 4.2), "node 17: 12 tried, 1 rejected, best x1.00, 4 s left");
}

TEST(Progress, SummaryNamesKernelsSearchAndTheBackendCompiler) {
  CompileSummary s;
  s.kernels = 40;
  s.seconds = 5.26;
  s.search_seconds = 19.84;
  s.search_budget_s = 20;
  s.searched = 3;
  s.from_cache = 5;
  s.compiler_seconds = 4.1;
  EXPECT_EQ(compiler::format_summary(s),
            "[lumen] compiled 40 kernels in 5.3 s: search 19.8 s of 20.0 s (3 searched, 5 from the tuning cache), "
            "compiler 4.1 s");
  CompileSummary warm;
  warm.kernels = 1;
  warm.seconds = 0.04;
  warm.object_cache_hit = true;
  EXPECT_EQ(compiler::format_summary(warm), "[lumen] compiled 1 kernel in 0.0 s, object cache hit");
}

std::string written(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  for (int ch; (ch = std::fgetc(f)) != EOF;) text.push_back(static_cast<char>(ch));
  return text;
}

TEST(Progress, OffATerminalOnlyTheSummaryIsWritten) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  compiler::ProgressLine line(false, true, f);
  ProgressCounts c;
  c.kernels_total = 3;
  for (int k = 1; k <= 3; ++k) {
    c.kernels_done = k;
    line.update(c, true);
  }
  CompileSummary s;
  s.kernels = 3;
  line.finish(s);
  EXPECT_EQ(written(f), compiler::format_summary(s) + "\n");
  std::fclose(f);
}

TEST(Progress, OnATerminalOneLineIsRewrittenInPlace) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  compiler::ProgressLine line(true, true, f);
  ProgressCounts c;
  c.kernels_total = 2;
  c.kernels_done = 1;
  line.update(c, true);
  c.kernels_done = 2;
  line.update(c);  // within 0.1 s of the last: skipped
  line.update(c, true);
  CompileSummary s;
  s.kernels = 2;
  line.finish(s);
  std::string text = written(f);
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "only the summary ends a line: " << text;
  EXPECT_NE(text.find("\r[lumen] scheduling kernel 1/2"), std::string::npos) << text;
  EXPECT_NE(text.find("\r[lumen] scheduling kernel 2/2"), std::string::npos) << text;
  EXPECT_EQ(text.rfind("kernel 2/2"), text.find("kernel 2/2")) << "a skipped update was written";
  EXPECT_NE(text.find(compiler::format_summary(s) + "\n"), std::string::npos) << text;
  std::fclose(f);
}

TEST(SearchCountdown, SecondsLeftIsNeverNegative) {
  auto now = std::chrono::steady_clock::now();
  EXPECT_EQ(search::seconds_left(now - std::chrono::seconds(5), now), 0.0);
  EXPECT_NEAR(search::seconds_left(now + std::chrono::milliseconds(1500), now), 1.5, 1e-9);
}

// A batch of candidates that overruns the kernel's share: every candidate
// measured after the deadline reports 0 s left (the countdown went negative).
TEST(SearchCountdown, ACandidateMeasuredAfterTheDeadlineReportsZeroLeft) {
  Graph g;
  Tensor a = g.input("a", {48, 64}), b = g.input("b", {64, 40});
  Tensor y = a.matmul(b);
  kernel::Partition p = kernel::partition(g, {y.edge()});
  search::SearchOptions options;
  options.use_cache = false;
  const double budget = 6;  // well over the seed's compile and timing, even on a loaded machine
  auto start = std::chrono::steady_clock::now();
  // The first batch is made after the deadline has passed (the hook runs
  // while the batch is prepared and alters nothing).
  options.tamper = [&](kernel::LoweredKernel&) {
    std::this_thread::sleep_until(start + std::chrono::milliseconds(static_cast<int>(budget * 1000) + 200));
    return false;
  };
  std::vector<search::CandidateProgress> seen;
  options.on_candidate = [&](const search::CandidateProgress& c) { seen.push_back(c); };
  search::ScheduleSearch search(g, p.materialized, options, {16, 2});
  search.choose(p.kernels.back(), budget);
  ASSERT_FALSE(seen.empty()) << "the search measured no candidate (the seed took longer than the budget)";
  for (const search::CandidateProgress& c : seen) {
    EXPECT_EQ(c.seconds_left, 0.0) << "node " << c.node << " after " << c.seconds << " s";
    EXPECT_GT(c.seconds, budget);
  }
}

}  // namespace
}  // namespace lumen
