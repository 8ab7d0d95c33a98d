// Live progress of a compile on a terminal: one line, rewritten in place
// ("\r"), with the kernels done of the total and the search time spent of the
// budget, then a summary line when the compile ends. Off a terminal nothing
// is printed per kernel, only the summary. The formatting is pure (counts and
// seconds in, text out) so it is tested apart from the terminal.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace lumen::compiler {

struct ProgressCounts {
  std::string stage = "scheduling";  // "scheduling" (kernel by kernel), or "compiling" (all of them at once)
  int kernels_done = 0, kernels_total = 0;
  double search_seconds = 0;  // spent so far
  double search_budget_s = 0;
  std::string detail;         // the kernel being searched, e.g. "node 17: 12 tried, best x1.31, 4 s left"
};

struct CompileSummary {
  int kernels = 0;
  double seconds = 0;  // the whole compile
  double search_seconds = 0, search_budget_s = 0;
  int searched = 0, from_cache = 0;
  double compiler_seconds = 0;  // in the backend's compiler (0 on an object cache hit)
  bool object_cache_hit = false;
};

// "[lumen] scheduling kernel 12/40, search 3.2 s of 20.0 s | node 17: ..." (no counts shown below zero).
std::string format_progress(const ProgressCounts& counts);
// "[lumen] compiled 40 kernels in 5.3 s: search 19.8 s of 20.0 s (3 searched, 5 from the tuning cache), ..."
std::string format_summary(const CompileSummary& summary);
// "node 17: 12 tried, 1 rejected, best x1.31, 4 s left" (seconds left clamped at 0).
std::string format_candidate(int node, int tried, int rejected, double speedup, double seconds_left);

// Writes the line to `out` (stderr) when enabled; a no-op otherwise.
class ProgressLine {
 public:
  // live: rewrite one line per update (a terminal); summary: print the last line.
  ProgressLine(bool live, bool summary, std::FILE* out = stderr);
  // Whether stderr is a terminal.
  static bool stderr_is_terminal();

  bool live() const { return live_; }
  // Rewrites the line; updates closer than 0.1 s apart are skipped unless `force`.
  void update(const ProgressCounts& counts, bool force = false);
  // Ends the live line and prints the summary.
  void finish(const CompileSummary& summary);

 private:
  bool live_, summary_;
  std::FILE* out_;
  size_t width_ = 0;  // of the last line written, to blank what a shorter line leaves
  std::chrono::steady_clock::time_point last_{};
  bool written_ = false;
};

}  // namespace lumen::compiler
