// The compiler: a graph and its outputs in, a backend's CompiledProgram out.
// The stages run in this order, one file each:
//
//   graph_stages.h      graph -> graph (graph passes; the e-graph search plugs in here)
//   program_boundary.h  outputs and state writes get their own buffers
//   fusion_stage.h      which nodes are materialised: one kernel each (lumen/kernel/fusion.h)
//   recompute_stage.h   values read far from where they are made: kept, or computed again
//   slice_stage.h       runs of kernels with large internal buffers become chunk kernels
//   schedule_stage.h    an action list per kernel: tuning cache, search (lumen/search), heuristic
//   lower_stage.h       loop-IR kernels, launches, scratch buffers, kept packs
//   emit_stage.h        backend: render, compile (cached on disk), load entries
//   confirm_stage.h     a searched program is timed whole against the heuristic one; the faster is kept
//
// The runtime (lumen/runtime) runs the result; lumen/compile.h wires the two.
#pragma once

#include <memory>
#include <vector>

#include "lumen/backend/backend.h"
#include "lumen/backend/compiled_program.h"
#include "lumen/compiler/confirm_stage.h"
#include "lumen/compiler/pipeline.h"
#include "lumen/compiler/recompute_stage.h"
#include "lumen/compiler/schedule_stage.h"

namespace lumen::compiler {

struct CompilerOptions {
  search::SearchOptions search;  // budget 0: heuristic schedules (and tuning cache hits)
  ScheduleChooser choose;        // overrides search (tests)
  kernel::SliceOptions slice;    // sliced execution of kernel groups with large internal buffers
  ChunkChooser choose_chunk;     // overrides each sliced group's chunk rows (tests)
  ProgramTimer time_programs;    // times whole programs (the searched one against the heuristic's); none: no check
  RecomputeOptions recompute;    // keep or recompute values read far from where they are made
  // Live progress on stderr when it is a terminal (kernels done, search time
  // spent of the budget), and a summary line when the compile ends.
  bool progress = false;
};

struct CompileResult {
  backend::CompiledProgram program;
  CompileReport report;
  search::SearchReport search_report;
};

CompileResult compile(const Graph& graph, const std::vector<Edge>& outputs, const CompilerOptions& options,
                      std::shared_ptr<const backend::Backend> backend);

// The compile's numbers as CompiledProgram::stats reports them.
std::map<std::string, double> compile_stats(const CompileReport& report, const search::SearchReport& search);
// Per searched kernel: its search over time.
std::vector<backend::SearchTrace> search_traces(const search::SearchReport& search);

}  // namespace lumen::compiler
