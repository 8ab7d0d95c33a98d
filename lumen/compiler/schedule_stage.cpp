#include "lumen/compiler/schedule_stage.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

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

void choose_schedules(Pipeline& p, const search::SearchOptions& options, const ScheduleChooser& choose) {
  search::ScheduleSearch search(*p.graph, p.materialized, options, p.target);
  std::map<NodeId, double> share = choose ? std::map<NodeId, double>{} : budget_shares(p, search, options.budget_s);
  p.schedules.clear();
  for (NodeId n : p.kernel_nodes) {
    auto s = share.find(n);
    p.schedules.push_back(choose ? choose(*p.graph, n, p.materialized)
                                 : search.choose(n, s == share.end() ? 0.0 : s->second));
  }
  p.search_report = search.report();
}

}  // namespace lumen::compiler
