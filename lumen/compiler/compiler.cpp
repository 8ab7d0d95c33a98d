#include "lumen/compiler/compiler.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <sstream>

#include "lumen/compiler/emit_stage.h"
#include "lumen/compiler/graph_stages.h"
#include "lumen/compiler/lower_stage.h"
#include "lumen/compiler/progress.h"
#include "lumen/compiler/recompute_stage.h"
#include "lumen/compiler/slice_stage.h"
#include "lumen/core/stopwatch.h"
#include "lumen/kernel/kernel_roots.h"

namespace lumen::compiler {

namespace {

using Clock = std::chrono::steady_clock;

kernel::Target target_of(const backend::Backend& backend) {
  backend::Capabilities c = backend.capabilities();
  return kernel::Target{c.f32_lanes, c.threads, c.gpu, c.bf16_dot, c.l2_bytes};
}

// What the runtime needs besides kernels and launches: set before the
// whole-program check, which may replace the program whole (with its own
// graph and groups) — nothing of the pipeline is copied into it after that.
void set_boundary(Pipeline& p) {
  p.program.graph = p.graph;
  p.program.outputs = p.outputs;
  p.program.needed = p.needed;
  p.program.groups = p.groups;
}

bool has_pair_dot(const kernel::Block& block) {
  std::function<bool(const kernel::Value&)> value = [&](const kernel::Value& v) {
    return v->kind == kernel::ValueKind::PairDot || std::any_of(v->args.begin(), v->args.end(), value);
  };
  return std::any_of(block.begin(), block.end(), [&](const kernel::Stmt& s) {
    return (s.value && value(s.value)) || (s.kind == kernel::StmtKind::Loop && has_pair_dot(s.body));
  });
}

// Which kernels compute a bf16 contraction (the precision pass's rounded
// operands), and whether each took the bf16 pair dot path (pair_dot: one
// vdpbf16ps per two k) or the f32 FMA path, and why. Empty when there are none.
std::string bf16_kernels(const Pipeline& p, bool bf16_dot) {
  size_t pairs = 0, total = 0;
  auto widened_bf16 = [&](const Edge& e) {
    const Node& x = p.graph->node(e.node);
    return x.op == Op::Cast && x.dtype == DType::F32 && p.graph->node(x.inputs[0].node).dtype == DType::BF16;
  };
  struct Line {
    std::string text;  // the first launch's node and shape, and the path
    int launches = 0;
  };
  std::vector<std::string> order;  // kernel names, first launch first (layers repeat kernels)
  std::map<std::string, Line> lines;
  for (const backend::Launch& l : p.program.launches) {
    if (l.computes < 0) continue;
    NodeId r = kernel::contraction_of(*p.graph, l.computes, p.materialized);
    if (r < 0) continue;
    const Node& product = p.graph->node(p.graph->node(r).inputs[0].node);
    if (product.op != Op::Mul || !widened_bf16(product.inputs[0]) || !widened_bf16(product.inputs[1])) continue;
    const kernel::Kernel& k = p.program.kernels[l.kernel];
    bool used = has_pair_dot(k.body);
    ++total;
    pairs += used ? 1 : 0;
    Line& line = lines[k.name];
    if (line.launches++ > 0) continue;
    order.push_back(k.name);
    line.text = std::string(op_name(p.graph->node(l.computes).op)) + "_" + std::to_string(l.computes) + ", " +
                to_string(p.graph->node(l.computes).shape) + "): " +
                (used ? "bf16 pair dot (vdpbf16ps)"
                      : bf16_dot ? "f32 FMA fallback (its schedule has no pair_dot)"
                                 : "f32 FMA fallback (this CPU has no avx512_bf16, or LUMEN_ISA hides it)");
  }
  if (total == 0) return "";
  std::ostringstream out;
  out << "bf16 contractions: " << pairs << " of " << total << " kernels on the bf16 pair dot path\n";
  for (const std::string& name : order) {
    const Line& line = lines[name];
    out << "  " << name << " x" << line.launches << " (" << (line.launches > 1 ? "first " : "") << line.text << "\n";
  }
  return out.str();
}

void describe(Pipeline& p, bool bf16_dot) {
  backend::CompiledProgram& prog = p.program;
  prog.stats = compile_stats(p.report, p.search_report);
  prog.stats["sliced_groups"] = static_cast<double>(prog.groups.size());
  prog.stats["recomputed_values"] = p.recompute.values;
  prog.stats["foreseen_peak_bytes"] = static_cast<double>(p.recompute.peak_bytes);
  prog.stats["foreseen_peak_bytes_kept"] = static_cast<double>(p.recompute.peak_bytes_before);
  prog.report = p.recompute.report + bf16_kernels(p, bf16_dot) + p.search_report.to_string() + p.slice_report + p.confirmation;
  prog.search_traces = search_traces(p.search_report);
}

CompileSummary summary_of(const Pipeline& p, double seconds, double budget) {
  CompileSummary s;
  s.kernels = p.report.kernels;
  s.seconds = seconds;
  s.search_seconds = p.search_report.seconds;
  s.search_budget_s = budget;
  for (const search::KernelReport& k : p.search_report.kernels) {
    s.searched += k.source == "search" ? 1 : 0;
    s.from_cache += k.source == "cache" ? 1 : 0;
  }
  s.compiler_seconds = p.report.compile_seconds;
  s.object_cache_hit = p.report.cache_hit;
  return s;
}

}  // namespace

CompileResult compile(const Graph& graph, const std::vector<Edge>& outputs, const CompilerOptions& options,
                      std::shared_ptr<const backend::Backend> backend) {
  Pipeline p;
  ProgressLine progress(options.progress && ProgressLine::stderr_is_terminal(), options.progress);
  auto compile_start = Clock::now();
  auto start = compile_start;
  p.graph = std::make_shared<Graph>(graph);
  p.outputs = outputs;
  run_graph_stages(graph_stages(), *p.graph, p.outputs);
  p.report.graph_seconds = seconds_since(start);

  start = Clock::now();
  partition_with_recompute(p, options.recompute, p.graph->dims_bound(options.search.dims, options.search.assumed_dim));
  p.target = target_of(*backend);
  search::SearchOptions search = options.search;
  slice_kernels(p, options.slice, backend->capabilities(), search);
  if (options.choose_chunk) rechunk_groups(p, options.choose_chunk);
  p.report.fusion_seconds = seconds_since(start);

  start = Clock::now();
  p.l3_bytes = backend->capabilities().l3_bytes;
  p.program.backend = backend;  // the search compiles and times candidates on it
  choose_schedules(p, search, options.choose, progress);
  p.report.schedule_seconds = seconds_since(start);

  start = Clock::now();
  lower_kernels(p);
  p.report.kernels = static_cast<int>(p.program.kernels.size());
  p.report.lower_seconds = seconds_since(start);

  ProgressCounts compiling;
  compiling.stage = "compiling";
  compiling.kernels_total = p.report.kernels;
  progress.update(compiling, true);
  emit_kernels(p, backend);
  set_boundary(p);
  auto make_heuristic = [&] {
    CompilerOptions plain = options;
    plain.search.budget_s = 0;
    plain.search.use_cache = false;
    plain.choose = {};
    plain.choose_chunk = {};
    plain.progress = false;
    return compile(graph, outputs, plain, backend).program;
  };
  confirm_against_heuristic(p, search, options.time_programs, backend, make_heuristic);
  describe(p, backend->capabilities().bf16_dot);
  progress.finish(summary_of(p, seconds_since(compile_start), options.choose ? 0.0 : options.search.budget_s));
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
