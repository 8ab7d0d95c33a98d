// Schedule search: for each kernel, find a faster schedule by measuring.
//
// A kernel's candidates are points of the schedule space (schedule_space.h),
// starting from the heuristic. Each candidate is lowered, compiled (batches in
// parallel, one compiler process per core), verified — its output on random
// inputs must match the reference evaluator on sampled elements and the seed
// schedule everywhere — and timed: warm-up, then the minimum of repeated runs,
// abandoned early once 3x slower than the best. A beam search walks
// neighbours of the best candidates until the budget is spent; the finalists
// are re-measured (median of 10) and the winner goes to the tuning cache.
// With budget 0, or on a cache hit, nothing is timed.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lumen/backend/backend.h"
#include "lumen/core/graph.h"
#include "lumen/kernel/heuristic.h"
#include "lumen/kernel/lower.h"
#include "lumen/kernel/schedule.h"
#include "lumen/search/tuning_cache.h"

namespace lumen::search {

// Where one kernel's search stands, after each measured candidate.
struct CandidateProgress {
  NodeId node = -1;
  int tried = 0, rejected = 0;
  double speedup = 1;         // heuristic time / best time so far
  double seconds = 0;         // into this kernel's search
  double seconds_left = 0;    // of this kernel's share of the budget; never negative
};

// Seconds from `now` until `deadline`, 0 once it has passed (a batch of
// candidates can overrun the share it started in).
double seconds_left(std::chrono::steady_clock::time_point deadline, std::chrono::steady_clock::time_point now);

struct SearchOptions {
  // Where candidates are compiled, run and timed; null: the host CPU.
  std::shared_ptr<const backend::Backend> backend;
  double budget_s = 0;       // total search time for a program; 0: heuristic schedules only
  bool use_cache = true;     // read and write the tuning cache
  std::string cache_path;    // default: LUMEN_CACHE_DIR/tuning.db
  int beam = 3;
  int64_t assumed_dim = 64;  // binding for dynamic dims while tuning ...
  std::map<std::string, int64_t> dims;  // ... unless named here (e.g. {"seq_blocks": 8})
  // The program's parameters all fit in the last-level cache (the compiler
  // decides, from their bytes and the backend's cache sizes): candidates then
  // read weights warm, as the program's runs will.
  bool parameters_warm = false;
  // Called after each measured candidate (e.g. a live progress line); may be empty.
  std::function<void(const CandidateProgress&)> on_candidate;
  // Test hook: may alter a candidate before it is compiled (e.g. inject a bug
  // that verification must catch). Returns true if it altered it.
  std::function<bool(kernel::LoweredKernel&)> tamper;
};

// The binding dynamic dims take while tuning: `dims` by name, else `assumed_dim`.
Bindings tuning_bindings(const Graph& graph, const SearchOptions& options);

struct KernelReport {
  NodeId node = -1;
  std::string fuses;        // the graph nodes the kernel fuses
  std::string actions;      // the chosen schedule
  std::string source;       // "cache", "search", "heuristic"
  double baseline_ms = 0;   // heuristic schedule (0 when not measured)
  double best_ms = 0;
  int tried = 0, rejected = 0, illegal = 0, slow = 0;
  int timing_runs = 0;
  double search_seconds = 0, compile_seconds = 0;
  std::vector<std::string> rejections;  // action lists that failed verification, with why
  std::vector<std::pair<double, double>> progress;  // (seconds, best ms so far)
};

struct SearchReport {
  std::vector<KernelReport> kernels;
  double seconds = 0;
  int timing_runs = 0;
  int cache_hits = 0;
  bool parameters_warm = false;  // candidates read weights warm (SearchOptions::parameters_warm)
  std::vector<std::string> warnings;
  std::string to_string() const;
};

class ScheduleSearch {
 public:
  ScheduleSearch(const Graph& graph, const std::vector<bool>& materialized, SearchOptions options,
                 kernel::Target target);
  ~ScheduleSearch();

  // The schedule for the kernel computing `node`, spending at most `budget_s`.
  // Kernels with the same key (the same computation at the same sizes, e.g.
  // a repeated layer) get the schedule chosen for the first, without searching.
  std::vector<kernel::Action> choose(NodeId node, double budget_s);
  // What identifies the kernel for tuning: its canonical loop nest, sizes, target.
  std::string key(NodeId node) const;
  // True if choose() would answer without measuring (seen here or in the cache).
  bool known(NodeId node) const;
  const SearchReport& report() const { return report_; }

  // Searching a kernel costs at least a few compiles and timings; a share of
  // the budget below this is not spent (the heuristic schedule stands).
  static constexpr double kMinSeconds = 2.0;

 private:
  Bindings tuning_dims() const;
  std::map<std::string, std::vector<kernel::Action>> chosen_;  // by key, in this process
  const Graph& graph_;
  const std::vector<bool>& materialized_;
  SearchOptions options_;
  kernel::Target target_;
  std::string fingerprint_;  // the backend's, part of every tuning key
  std::unique_ptr<TuningCache> cache_;
  SearchReport report_;
};

}  // namespace lumen::search
