// Graph-level search: the e-graph stage of the compiler. With a search
// budget, the graph is saturated under the general rules (lumen/egraph)
// within limits, the best few distinct programs are extracted (the original
// graph always among them), each is compiled with the heuristic schedules,
// checked against the interpreter (beyond the original and one rewrite,
// only while the search budget lasts), and the verified ones are timed as
// whole programs, interleaved; the fastest
// verified one is then compiled with the full schedule-search budget. The
// choice is remembered in the tuning cache (key: canonical graph hash and
// device fingerprint), so a warm compile measures nothing. Budget 0 skips
// the stage entirely.
//
// Running programs is the runtime's job, so the caller supplies the check
// (lumen/compile.cpp builds it on runtime/candidate_rig and the interpreter)
// and the timer (CompilerOptions::time_programs: whole programs interleaved
// run by run). Without either, the stage is skipped.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lumen/compiler/compiler.h"
#include "lumen/egraph/saturate.h"

namespace lumen::compiler {

// A program the e-graph does not derive, measured beside its candidates: a
// rewrite that changes numerics (int8 dot products), so it is checked by the
// approximate check, not against the reference's exact tolerance.
struct ExtraCandidate {
  std::string label;
  Graph graph;
  std::vector<Edge> outputs;
};

// Runs a compiled candidate once and throws lumen::Error when its outputs or
// state writes disagree with the reference on random inputs. The original
// graph's program is always checked first.
using ProgramCheck = std::function<void(const backend::CompiledProgram& program)>;

struct GraphSearchOptions {
  egraph::Limits limits;
  size_t candidates = 3;  // programs measured, the original included
  std::vector<ExtraCandidate> extra;
  ProgramCheck approximate_check;  // checks the extra candidates; without it they are not measured
};

struct GraphCandidateReport {
  std::string label;     // "original", "best", or which class changed
  double cost = 0;       // the cost model's estimate
  bool original = false;
  bool approximate = false;  // an extra candidate that changes numerics
  uint64_t hash = 0;     // egraph::graph_hash of the candidate
  double ms = -1;        // median of interleaved whole-program runs; -1: not timed
  std::string rejected;  // why it could not win (verification, compile error)
  std::string skipped;   // why it was not measured (the budget)
};

struct GraphSearchReport {
  bool ran = false;     // false: budget 0 (the stage was skipped)
  bool cached = false;  // the choice came from the tuning cache: nothing was measured
  std::string saturation;  // egraph::SaturationReport::summary()
  std::map<std::string, size_t> fired;
  double saturate_seconds = 0, extract_seconds = 0, measure_seconds = 0;
  std::vector<GraphCandidateReport> candidates;
  int winner = -1;  // index into candidates
  std::string note;  // e.g. why the original was kept without measuring
  std::string to_string() const;
};

// Raised whenever the way a rewrite is accepted changes (the slicing test,
// the noise margin, the check), so cached choices made under the old tests
// are measured again. Version 2: rewrites that slice fewer groups are refused.
inline constexpr int kGraphChoiceVersion = 2;

// The tuning-cache key of a graph-level choice: the version, the rule names,
// the graph, the backend's fingerprint, threads and the saturation limits.
std::string graph_choice_key(const Graph& graph, const std::vector<Edge>& outputs, const backend::Backend& backend,
                             const GraphSearchOptions& options);

// compile() with the graph-level stage in front (see the file comment).
CompileResult compile_with_graph_search(const Graph& graph, const std::vector<Edge>& outputs,
                                        const CompilerOptions& options, std::shared_ptr<const backend::Backend> backend,
                                        const ProgramCheck& check, const GraphSearchOptions& search = {},
                                        GraphSearchReport* report = nullptr);

}  // namespace lumen::compiler
