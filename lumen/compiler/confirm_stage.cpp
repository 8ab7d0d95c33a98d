#include "lumen/compiler/confirm_stage.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "lumen/compiler/emit_stage.h"
#include "lumen/compiler/lower_stage.h"
#include "lumen/search/tuning_cache.h"

namespace lumen::compiler {

namespace {

Bindings timing_dims(const Graph& graph, const search::SearchOptions& options) {
  Bindings dims;
  for (const std::string& d : graph.dim_names()) {
    auto it = options.dims.find(d);
    dims[d] = it != options.dims.end() ? it->second : options.assumed_dim;
  }
  return dims;
}

// What the runtime needs besides kernels and launches (compiler.cpp fills the rest last).
void with_boundary(Pipeline& p) {
  p.program.graph = p.graph;
  p.program.outputs = p.outputs;
  p.program.needed = p.needed;
}

// The heuristic's program: the same partition with the heuristic's schedules.
Pipeline heuristic_program(const Pipeline& searched, std::vector<std::vector<kernel::Action>> schedules,
                           const std::shared_ptr<const backend::Backend>& backend) {
  Pipeline h;
  h.graph = searched.graph;
  h.outputs = searched.outputs;
  h.writes = searched.writes;
  h.needed = searched.needed;
  h.materialized = searched.materialized;
  h.kernel_nodes = searched.kernel_nodes;
  h.target = searched.target;
  h.schedules = std::move(schedules);
  lower_kernels(h);
  emit_kernels(h, backend);
  with_boundary(h);
  return h;
}

std::string describe(double searched_ms, double heuristic_ms, bool keep, bool cached) {
  char line[256];
  std::snprintf(line, sizeof line, "whole-program check: searched %.3f ms, heuristic %.3f ms (%s): kept the %s schedules\n",
                searched_ms, heuristic_ms, cached ? "from the tuning cache" : "medians of interleaved runs",
                keep ? "searched" : "heuristic");
  return line;
}

}  // namespace

void confirm_against_heuristic(Pipeline& p, const search::SearchOptions& options, const ProgramTimer& timer,
                               const std::shared_ptr<const backend::Backend>& backend) {
  if (options.budget_s <= 0 || !timer || p.kernel_nodes.empty()) return;
  std::vector<std::vector<kernel::Action>> heuristic;
  std::string plan;
  for (NodeId n : p.kernel_nodes) {
    heuristic.push_back(kernel::heuristic_actions(*p.graph, n, p.materialized, p.target));
    plan += kernel::to_string(heuristic.back()) + "\n";
  }
  if (heuristic == p.schedules) {
    p.confirmation = "whole-program check: not needed (the search kept every heuristic schedule)\n";
    return;
  }
  with_boundary(p);
  Bindings dims = timing_dims(*p.graph, options);
  std::string key = search::program_key(p.program.source, plan, dims, p.target.threads, backend->fingerprint());
  std::unique_ptr<search::TuningCache> cache;
  if (options.use_cache) cache = std::make_unique<search::TuningCache>(options.cache_path);
  if (cache) {
    if (std::optional<search::TuningEntry> hit = cache->lookup(key)) {
      bool keep = hit->actions == "searched";
      p.confirmation = describe(hit->best_ms, hit->baseline_ms, keep, true);
      if (!keep) p.program = heuristic_program(p, std::move(heuristic), backend).program;
      return;
    }
  }
  Pipeline h = heuristic_program(p, heuristic, backend);
  double seconds = std::clamp(0.05 * options.budget_s, 0.3, 3.0);
  std::vector<double> ms = timer({&p.program, &h.program}, dims, seconds);
  bool keep = ms.size() == 2 && ms[0] < ms[1] * kConfirmMargin;
  p.confirmation = describe(ms.at(0), ms.at(1), keep, false);
  if (cache) {
    search::TuningEntry entry;
    entry.actions = keep ? "searched" : "heuristic";
    entry.best_ms = ms[0];
    entry.baseline_ms = ms[1];
    entry.description = "whole-program check of " + std::to_string(p.kernel_nodes.size()) + " kernels";
    entry.created = static_cast<int64_t>(std::time(nullptr));
    cache->store(key, entry);
  }
  if (!keep) {
    p.program = std::move(h.program);
    p.schedules = std::move(heuristic);
  }
}

}  // namespace lumen::compiler
