#include "lumen/compiler/compiler.h"

#include <algorithm>
#include <chrono>

#include "lumen/compiler/emit_stage.h"
#include "lumen/compiler/graph_stages.h"
#include "lumen/compiler/lower_stage.h"
#include "lumen/compiler/program_boundary.h"
#include "lumen/kernel/fusion.h"

namespace lumen::compiler {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Fusion: which nodes get a buffer. Kernels are the materialised nodes the
// program needs, state writes excluded (lower_stage adds those last).
void partition_kernels(Pipeline& p) {
  std::vector<Edge> roots = p.outputs;
  for (const StateWrite& w : p.writes) roots.push_back(p.graph->node(w.copy).inputs[0]);
  kernel::Partition part = kernel::partition(*p.graph, roots);
  p.report.fusion_rounds = part.rounds;
  p.materialized = part.materialized;
  auto is_write = [&](NodeId n) {
    return std::any_of(p.writes.begin(), p.writes.end(), [&](const StateWrite& w) { return w.copy == n; });
  };
  for (NodeId n : part.kernels) {
    if (!p.needed[static_cast<size_t>(n)] || is_write(n)) continue;
    p.kernel_nodes.push_back(n);
  }
}

kernel::Target target_of(const backend::Backend& backend) {
  backend::Capabilities c = backend.capabilities();
  return kernel::Target{c.f32_lanes, c.threads};
}

void describe(Pipeline& p) {
  backend::CompiledProgram& prog = p.program;
  prog.graph = p.graph;
  prog.outputs = p.outputs;
  prog.needed = p.needed;
  prog.stats = compile_stats(p.report, p.search_report);
  prog.report = p.search_report.to_string();
  prog.search_traces = search_traces(p.search_report);
}

}  // namespace

CompileResult compile(const Graph& graph, const std::vector<Edge>& outputs, const CompilerOptions& options,
                      std::shared_ptr<const backend::Backend> backend) {
  Pipeline p;
  auto start = Clock::now();
  p.graph = std::make_shared<Graph>(graph);
  p.outputs = outputs;
  run_graph_stages(graph_stages(), *p.graph, p.outputs);
  set_program_boundary(p);
  p.report.graph_seconds = seconds_since(start);

  start = Clock::now();
  partition_kernels(p);
  p.report.fusion_seconds = seconds_since(start);

  start = Clock::now();
  p.target = target_of(*backend);
  choose_schedules(p, options.search, options.choose);
  p.report.schedule_seconds = seconds_since(start);

  start = Clock::now();
  lower_kernels(p);
  p.report.kernels = static_cast<int>(p.program.kernels.size());
  p.report.lower_seconds = seconds_since(start);

  emit_kernels(p, std::move(backend));
  describe(p);
  return {std::move(p.program), p.report, std::move(p.search_report)};
}

std::map<std::string, double> compile_stats(const CompileReport& report, const search::SearchReport& search) {
  return {{"kernels", report.kernels},
          {"fusion_rounds", report.fusion_rounds},
          {"graph_seconds", report.graph_seconds},
          {"fusion_seconds", report.fusion_seconds},
          {"schedule_seconds", report.schedule_seconds},
          {"lower_seconds", report.lower_seconds},
          {"codegen_seconds", report.codegen_seconds},
          {"compile_seconds", report.compile_seconds},
          {"object_cache_hit", report.cache_hit ? 1.0 : 0.0},
          {"search_seconds", search.seconds},
          {"search_timing_runs", static_cast<double>(search.timing_runs)},
          {"search_cache_hits", static_cast<double>(search.cache_hits)}};
}

std::vector<backend::SearchTrace> search_traces(const search::SearchReport& search) {
  std::vector<backend::SearchTrace> out;
  for (const search::KernelReport& k : search.kernels) {
    if (k.source == "search" && !k.progress.empty()) out.push_back({k.fuses, k.progress, k.baseline_ms, k.best_ms});
  }
  return out;
}

}  // namespace lumen::compiler
