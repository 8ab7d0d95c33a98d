#include "lumen/compiler/confirm_stage.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "lumen/kernel/heuristic.h"
#include "lumen/search/tuning_cache.h"

namespace lumen::compiler {

namespace {


std::string describe(double searched_ms, double heuristic_ms, bool keep, bool cached) {
  char line[256];
  std::snprintf(line, sizeof line, "whole-program check: searched %.3f ms, heuristic %.3f ms (%s): kept the %s schedules\n",
                searched_ms, heuristic_ms, cached ? "from the tuning cache" : "medians of interleaved runs",
                keep ? "searched" : "heuristic");
  return line;
}

}  // namespace

void confirm_against_heuristic(Pipeline& p, const search::SearchOptions& options, const ProgramTimer& timer,
                               const std::shared_ptr<const backend::Backend>& backend,
                               const std::function<backend::CompiledProgram()>& make_heuristic) {
  if (options.budget_s <= 0 || !timer || !make_heuristic || p.kernel_nodes.empty()) return;
  bool same_schedules = true;
  for (size_t k = 0; k < p.kernel_nodes.size() && same_schedules; ++k) {
    same_schedules = kernel::heuristic_actions(*p.graph, p.kernel_nodes[k], p.materialized, p.target) == p.schedules[k];
  }
  if (same_schedules && p.program.groups.empty()) {
    p.confirmation = "whole-program check: not needed (the search kept every heuristic schedule)\n";
    return;
  }
  backend::CompiledProgram heuristic = make_heuristic();
  if (heuristic.source == p.program.source) {
    p.confirmation = "whole-program check: not needed (the searched program is the heuristic one)\n";
    return;
  }
  Bindings dims = search::tuning_bindings(*p.graph, options);
  std::string key = search::program_key(p.program.source, heuristic.source, dims, p.target.threads, backend->fingerprint());
  std::unique_ptr<search::TuningCache> cache;
  if (options.use_cache) cache = std::make_unique<search::TuningCache>(options.cache_path);
  std::optional<search::TuningEntry> hit;
  if (cache) hit = cache->lookup(key);
  std::vector<double> ms{hit ? hit->best_ms : 0.0, hit ? hit->baseline_ms : 0.0};
  if (!hit) ms = timer({&p.program, &heuristic}, dims, std::clamp(0.05 * options.budget_s, 0.3, 3.0));
  bool keep = hit ? hit->actions == "searched" : ms.size() == 2 && ms[0] < ms[1] * kConfirmMargin;
  p.confirmation = describe(ms.at(0), ms.at(1), keep, hit.has_value());
  if (cache && !hit) {
    search::TuningEntry entry;
    entry.actions = keep ? "searched" : "heuristic";
    entry.best_ms = ms[0];
    entry.baseline_ms = ms[1];
    entry.description = "whole-program check of " + std::to_string(p.kernel_nodes.size()) + " kernels";
    entry.created = static_cast<int64_t>(std::time(nullptr));
    cache->store(key, entry);
  }
  if (!keep) {  // the heuristic program was compiled from its own copy of the graph (its slicing may differ)
    p.program = std::move(heuristic);
    p.graph = p.program.graph;
    p.outputs = p.program.outputs;
    p.needed = p.program.needed;
    p.groups = p.program.groups;
    p.chunk_member_of.clear();
  }
}

}  // namespace lumen::compiler
