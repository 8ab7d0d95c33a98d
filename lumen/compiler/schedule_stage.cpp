#include "lumen/compiler/schedule_stage.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include "lumen/compiler/slice_stage.h"
#include "lumen/kernel/schedule_space.h"

namespace lumen::compiler {

namespace {

// The budget goes to distinct kernels (a repeated layer is searched once),
// in proportion to their work; kernels whose share would be too small to
// search are left to the heuristic and their share goes to the rest. The
// shares do not depend on what the tuning cache holds, so a second compile
// of the same program finds every searched kernel there and searches nothing.
std::map<NodeId, double> budget_shares(const Pipeline& p, const search::ScheduleSearch& search, double budget) {
  std::map<NodeId, double> share;
  if (budget <= 0) return share;
  std::map<std::string, std::pair<NodeId, double>> distinct;  // key -> (first node, work of all its instances)
  for (NodeId n : p.kernel_nodes) {
    double w = std::max(kernel::kernel_facts(*p.graph, n, p.materialized, p.target).work, 1.0);
    auto [it, fresh] = distinct.emplace(search.key(n), std::make_pair(n, 0.0));
    it->second.second += w;
  }
  std::vector<std::pair<double, NodeId>> by_work;
  for (const auto& [key, entry] : distinct) by_work.emplace_back(entry.second, entry.first);
  std::sort(by_work.rbegin(), by_work.rend());
  while (!by_work.empty()) {  // drop the lightest until every share is worth searching
    double total = 0;
    for (const auto& [w, n] : by_work) total += w;
    if (budget * by_work.back().first / total >= search::ScheduleSearch::kMinSeconds || by_work.size() == 1) {
      for (const auto& [w, n] : by_work) share[n] = budget * w / total;
      break;
    }
    by_work.pop_back();
  }
  return share;
}

}  // namespace

int64_t parameter_bytes(const Graph& graph, const std::vector<bool>& needed, const search::SearchOptions& options) {
  double bytes = 0;
  for (NodeId id : graph.input_ids()) {
    const Node& n = graph.node(id);
    if (!n.parameter || !needed[static_cast<size_t>(id)]) continue;
    double elements = 1;  // a parameter with a dynamic dim (rare) counts it at the tuning size
    for (const Expr& d : n.shape) elements *= static_cast<double>(d.is_const() ? d.value() : options.assumed_dim);
    bytes += elements * static_cast<double>(dtype_size(n.dtype));
  }
  return static_cast<int64_t>(bytes);
}

void choose_schedules(Pipeline& p, const search::SearchOptions& options, const ScheduleChooser& choose,
                      ProgressLine& progress) {
  ProgressCounts counts;
  counts.kernels_total = static_cast<int>(p.kernel_nodes.size());
  counts.search_budget_s = choose ? 0.0 : options.budget_s;
  const search::ScheduleSearch* running = nullptr;
  search::SearchOptions with_progress = options;
  int64_t params = parameter_bytes(*p.graph, p.needed, options);
  with_progress.parameters_warm = p.l3_bytes > 0 && params > 0 &&
                                  static_cast<double>(params) <= kWarmParameterShare * static_cast<double>(p.l3_bytes);
  with_progress.backend = p.program.backend;
  if (progress.live()) {
    with_progress.on_candidate = [&](const search::CandidateProgress& c) {
      counts.search_seconds = running->report().seconds + c.seconds;
      counts.detail = format_candidate(c.node, c.tried, c.rejected, c.speedup, c.seconds_left);
      progress.update(counts);
    };
  }
  search::ScheduleSearch search(*p.graph, p.materialized, with_progress, p.target);
  running = &search;
  const double stage_start = search.report().seconds;
  std::map<NodeId, double> share = choose ? std::map<NodeId, double>{} : budget_shares(p, search, options.budget_s);
  // Each group's chunk rows are chosen by timing (LUMEN_TIME_CHUNKS=0 keeps
  // the heuristic's, to compare).
  const char* time_chunks = std::getenv("LUMEN_TIME_CHUNKS");
  bool timed_chunks = !(time_chunks && std::string(time_chunks) == "0");
  if (timed_chunks && !choose && options.budget_s > 0 && !p.groups.empty()) choose_chunks(p, search, share);
  p.schedules.clear();
  progress.update(counts, true);
  // The budget bounds the stage: each kernel's share is scaled by the time left over the shares
  // left, so time a kernel takes beyond its share (compiling and re-timing its finalists) comes
  // out of the shares after it, and time it leaves unused goes to them (mobilenet_v3_small at a
  // 20 s budget searched for 27.9 s before).
  double planned = 0;
  for (const auto& [n, seconds] : share) planned += seconds;
  for (NodeId n : p.kernel_nodes) {
    auto s = share.find(n);
    double seconds = 0;
    if (s != share.end() && planned > 0) {
      double left = options.budget_s - (search.report().seconds - stage_start);
      seconds = s->second * std::max(left, 0.0) / planned;
      // Cut below half the least worth searching by the kernels before it: the heuristic (a budget
      // too small from the start, a single kernel's 0.5 s, is still spent).
      if (seconds < s->second && seconds < search::ScheduleSearch::kMinSeconds / 2) seconds = 0;
      planned -= s->second;
    }
    p.schedules.push_back(choose ? choose(*p.graph, n, p.materialized) : search.choose(n, seconds));
    counts.kernels_done++;
    counts.search_seconds = search.report().seconds;
    counts.detail.clear();
    progress.update(counts, counts.kernels_done == counts.kernels_total);
  }
  p.search_report = search.report();
}

}  // namespace lumen::compiler
