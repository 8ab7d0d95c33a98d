#include "lumen/compiler/graph_search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "lumen/core/error.h"
#include "lumen/core/stopwatch.h"
#include "lumen/egraph/extract.h"
#include "lumen/egraph/graph_hash.h"
#include "lumen/egraph/rules.h"
#include "lumen/search/tuning_cache.h"

namespace lumen::compiler {

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kNoiseMargin = 0.97;  // a rewrite wins only if at most this fraction of the original's time

std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

struct Extracted {
  egraph::EGraph egraph;
  egraph::GraphRoots roots;
  std::vector<egraph::Candidate> candidates;
  std::vector<bool> approximate;  // per candidate: an extra one (checked approximately)
};

// Saturates and extracts, filling the report's e-graph figures.
std::unique_ptr<Extracted> extract(const Graph& graph, const std::vector<Edge>& outputs, const GraphSearchOptions& options,
                                   GraphSearchReport& report) {
  auto x = std::make_unique<Extracted>();
  auto start = Clock::now();
  x->roots = x->egraph.add_graph(graph, outputs);
  egraph::SaturationReport sat = egraph::saturate(x->egraph, egraph::default_rules(), options.limits);
  report.saturate_seconds = seconds_since(start);
  report.saturation = sat.summary();
  for (const auto& [name, count] : sat.fired) {
    if (count > 0) report.fired[name] = count;
  }
  start = Clock::now();
  egraph::Extractor extractor(x->egraph, x->roots, graph);
  x->candidates = extractor.candidates(options.candidates);
  report.extract_seconds = seconds_since(start);
  // The original first: it is measured first and is the reference for state writes.
  std::stable_partition(x->candidates.begin(), x->candidates.end(), [](const egraph::Candidate& c) { return c.original; });
  x->approximate.assign(x->candidates.size(), false);
  for (const ExtraCandidate& e : options.extra) {
    egraph::Candidate c;
    c.graph = e.graph;
    c.outputs = e.outputs;
    c.hash = egraph::graph_hash(c.graph, c.outputs);
    c.label = e.label;
    x->candidates.push_back(std::move(c));
    x->approximate.push_back(true);
  }
  for (size_t i = 0; i < x->candidates.size(); ++i) {
    const egraph::Candidate& c = x->candidates[i];
    report.candidates.push_back({c.label, c.cost, c.original, x->approximate[i], c.hash, -1, "", ""});
  }
  return x;
}

CompilerOptions heuristic_only(const CompilerOptions& options) {
  CompilerOptions o = options;
  o.search.budget_s = 0;  // candidates are compared with heuristic schedules (and cached ones)
  o.progress = false;
  return o;
}


// Compiles and checks each candidate (the original first), times the
// verified ones together, and returns the index of the fastest (the
// original unless a rewrite beats it beyond noise), or -1 when the original
// itself could not be checked.
int measure_candidates(const Extracted& x, const Graph& graph, const CompilerOptions& options,
                       const std::shared_ptr<const backend::Backend>& backend, const ProgramCheck& check,
                       const ProgramCheck& approximate_check, GraphSearchReport& report) {
  auto start = Clock::now();
  std::vector<backend::CompiledProgram> programs;
  std::vector<size_t> which;  // candidate index of each program
  size_t original_groups = 0;
  // The original first (the reference), then the extra candidates (another numerics the caller
  // asks to weigh: integer dot products), then the rewrites while the search budget lasts — one
  // rewrite at least where there is no extra. (Each candidate is a whole compile and check: four
  // seconds for a Llama 110M decode program.)
  std::vector<size_t> order;
  for (size_t i = 0; i < x.candidates.size(); ++i) {
    if (x.candidates[i].original) order.insert(order.begin(), i);
    else if (x.approximate[i]) order.push_back(i);
  }
  const bool extras = order.size() > 1;
  for (size_t i = 0; i < x.candidates.size(); ++i) {
    if (!x.candidates[i].original && !x.approximate[i]) order.push_back(i);
  }
  size_t rewrites = 0;
  for (size_t i : order) {
    const egraph::Candidate& c = x.candidates[i];
    GraphCandidateReport& r = report.candidates[i];
    const bool approximate = x.approximate[i];
    if (!c.original && !approximate && (rewrites > 0 || extras) && seconds_since(start) > options.search.budget_s) {
      r.skipped = "not measured: the graph search used up the search budget";
      continue;
    }
    if (!c.original && !approximate) ++rewrites;
    try {
      CompileResult compiled = compile(c.graph, c.outputs, heuristic_only(options), backend);
      // Memory is not traded for speed: a rewrite that loses a sliced group
      // would materialise a buffer the original holds one chunk at a time.
      if (c.original) original_groups = compiled.program.groups.size();
      if (!c.original && compiled.program.groups.size() < original_groups) {
        fail("slices ", compiled.program.groups.size(), " kernel groups where the original slices ", original_groups,
             " (a buffer the original holds one chunk at a time would be materialised whole)");
      }
      if (!approximate) {
        check(compiled.program);
      } else if (approximate_check) {
        approximate_check(compiled.program);
      } else {
        fail("changes numerics and no approximate check was given");
      }
      programs.push_back(std::move(compiled.program));
      which.push_back(i);
    } catch (const Error& e) {
      r.rejected = e.what();
      if (c.original) return -1;  // no reference to compare against: keep the original unmeasured
    }
  }
  std::vector<const backend::CompiledProgram*> timed;
  for (const backend::CompiledProgram& p : programs) timed.push_back(&p);
  double seconds = std::clamp(0.05 * options.search.budget_s, 0.3, 3.0);
  std::vector<double> ms = timed.size() > 1 ? options.time_programs(timed, search::tuning_bindings(graph, options.search), seconds)
                                            : std::vector<double>{};
  report.measure_seconds = seconds_since(start);
  if (ms.size() != timed.size()) return 0;  // nothing to compare: the original
  int winner = 0;
  for (size_t k = 0; k < ms.size(); ++k) {
    report.candidates[which[k]].ms = ms[k];
    if (ms[k] < ms[static_cast<size_t>(winner)]) winner = static_cast<int>(k);
  }
  // A rewrite must beat the original (timed first) by more than timing noise to be chosen.
  if (!(ms[static_cast<size_t>(winner)] < ms[0] * kNoiseMargin)) winner = 0;
  return static_cast<int>(which[static_cast<size_t>(winner)]);
}

}  // namespace

std::string GraphSearchReport::to_string() const {
  std::ostringstream out;
  if (!ran) return "graph search: skipped (search budget 0)\n";
  out << "graph search: " << (cached ? "choice from the tuning cache (nothing measured)" : "measured") << "\n";
  if (!saturation.empty()) {
    out << "  " << saturation << "\n";
    out << "  saturate " << saturate_seconds * 1e3 << " ms, extract " << extract_seconds * 1e3 << " ms, measure "
        << measure_seconds * 1e3 << " ms\n";
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    const GraphCandidateReport& c = candidates[i];
    out << "  " << (static_cast<int>(i) == winner ? "* " : "  ") << "candidate " << i << " (" << c.label;
    if (c.approximate) out << ", changes numerics";
    else out << ", cost " << c.cost;
    out << ", graph " << hex(c.hash) << "): ";
    if (!c.rejected.empty()) out << "rejected: " << c.rejected;
    else if (!c.skipped.empty()) out << c.skipped;
    else if (c.ms >= 0) out << c.ms << " ms";
    else out << "not measured";
    out << "\n";
  }
  if (!note.empty()) out << "  " << note << "\n";
  return out.str();
}

std::string graph_choice_key(const Graph& graph, const std::vector<Edge>& outputs, const backend::Backend& backend,
                             const GraphSearchOptions& options) {
  backend::Capabilities caps = backend.capabilities();
  std::ostringstream key;
  // A choice made under other rules or other acceptance tests is not reused:
  // the version names the acceptance tests, the rule names the rewrites.
  key << "graph-level v" << kGraphChoiceVersion << " rules";
  for (const egraph::Rule& r : egraph::default_rules()) key << " " << r.name;
  key << " | " << hex(egraph::graph_hash(graph, outputs)) << " | " << backend.fingerprint() << " threads "
      << caps.threads << " | limits " << options.limits.max_nodes << "/"
      << options.limits.max_iterations << " candidates " << options.candidates;
  for (const ExtraCandidate& e : options.extra) key << " | extra " << e.label << " " << hex(egraph::graph_hash(e.graph, e.outputs));
  return key.str();
}

namespace {

// Decides which program to compile: the cached choice, else the fastest
// verified candidate (stored in the cache). Fills `report`; the winner's
// graph stays in `x`.
void choose_program(const Graph& graph, const std::vector<Edge>& outputs, const CompilerOptions& options,
                    const std::shared_ptr<const backend::Backend>& backend, const ProgramCheck& check,
                    const GraphSearchOptions& search, search::TuningCache* cache, const std::string& key,
                    std::unique_ptr<Extracted>& x, GraphSearchReport& report) {
  std::optional<search::TuningEntry> hit = cache ? cache->lookup(key) : std::nullopt;
  if (hit) {
    report.cached = true;
    if (hit->actions == hex(egraph::graph_hash(graph, outputs))) {
      report.note = "the original graph won when measured (" + std::to_string(hit->best_ms) + " ms)";
      return;
    }
    x = extract(graph, outputs, search, report);  // another program won: extract again (saturation is deterministic)
    for (size_t i = 0; i < x->candidates.size(); ++i) {
      if (hex(x->candidates[i].hash) == hit->actions) report.winner = static_cast<int>(i);
    }
    if (report.winner < 0) report.note = "the cached winner " + hit->actions + " was not extracted again; kept the original";
    return;
  }
  x = extract(graph, outputs, search, report);
  if (x->candidates.size() <= 1) {
    report.note = "no rewrite gave another program; kept the original";
    return;
  }
  report.winner = measure_candidates(*x, graph, options, backend, check, search.approximate_check, report);
  if (report.winner < 0 || !cache) return;
  const GraphCandidateReport& w = report.candidates[static_cast<size_t>(report.winner)];
  search::TuningEntry entry;
  entry.actions = hex(w.hash);
  entry.best_ms = w.ms;
  entry.baseline_ms = report.candidates[0].ms;  // the original, measured first
  entry.description = "graph-level choice: " + w.label;
  entry.created = static_cast<int64_t>(std::time(nullptr));
  cache->store(key, entry);
}

}  // namespace

CompileResult compile_with_graph_search(const Graph& graph, const std::vector<Edge>& outputs,
                                        const CompilerOptions& options, std::shared_ptr<const backend::Backend> backend,
                                        const ProgramCheck& check, const GraphSearchOptions& search,
                                        GraphSearchReport* report_out) {
  GraphSearchReport report;
  if (options.search.budget_s <= 0 || !check || !options.time_programs) {
    if (report_out) *report_out = report;
    return compile(graph, outputs, options, std::move(backend));
  }
  report.ran = true;
  std::unique_ptr<Extracted> x;
  try {
    std::unique_ptr<search::TuningCache> cache;
    if (options.search.use_cache) cache = std::make_unique<search::TuningCache>(options.search.cache_path);
    std::string key = graph_choice_key(graph, outputs, *backend, search);
    choose_program(graph, outputs, options, backend, check, search, cache.get(), key, x, report);
  } catch (const std::exception& e) {  // the stage never fails a compile: the original is always a program
    report.winner = -1;
    report.note = std::string("graph search failed, kept the original: ") + e.what();
  }
  const Graph* chosen_graph = &graph;
  const std::vector<Edge>* chosen_outputs = &outputs;
  if (x && report.winner >= 0) {
    chosen_graph = &x->candidates[static_cast<size_t>(report.winner)].graph;
    chosen_outputs = &x->candidates[static_cast<size_t>(report.winner)].outputs;
  }
  // The budget bounds the whole search: the graph stage's time comes out of the schedule search's.
  const double graph_seconds = report.saturate_seconds + report.extract_seconds + report.measure_seconds;
  CompilerOptions rest = options;
  rest.search.budget_s = std::max(0.0, options.search.budget_s - graph_seconds);
  CompileResult result = compile(*chosen_graph, *chosen_outputs, rest, std::move(backend));
  result.program.report = report.to_string() + result.program.report;
  result.program.stats["graph_search_seconds"] = graph_seconds;
  result.program.stats["graph_candidates"] = static_cast<double>(report.candidates.size());
  auto timed = [](const GraphCandidateReport& c) { return c.ms >= 0; };
  result.program.stats["graph_candidates_timed"] =
      static_cast<double>(std::count_if(report.candidates.begin(), report.candidates.end(), timed));
  result.program.stats["graph_winner_original"] =
      report.winner < 0 || report.candidates[static_cast<size_t>(report.winner)].original ? 1.0 : 0.0;
  if (report_out) *report_out = report;
  return result;
}

}  // namespace lumen::compiler
