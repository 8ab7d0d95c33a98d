// CompiledProgram — what the compiler hands the runtime: the graph as
// compiled (outputs and state writes given their own buffers), the kernels
// and the module a Backend compiled them into, the launch list (each
// launch's entry, buffers and what it computes), the scratch buffers, which
// parameter packs are kept between runs, and the compile's reports. Nothing
// in it changes when the program runs; the runtime plans memory and
// launches from it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lumen/backend/backend.h"
#include "lumen/core/graph.h"
#include "lumen/kernel/ir.h"

namespace lumen::backend {

// What a launch computes, besides a graph node (>= 0).
constexpr NodeId kPackLaunch = -1;   // a pre-kernel: fills a scratch buffer (operand packing, partials)
constexpr NodeId kWriteLaunch = -2;  // a state write: fills a state buffer, after every other launch

struct Launch {
  size_t kernel = 0;  // index into CompiledProgram::kernels
  Entry entry;
  // Kernel buffer i holds graph node buffers[i] (>= 0) or scratch buffer -1 - buffers[i].
  std::vector<NodeId> buffers;
  NodeId computes = kPackLaunch;  // a graph node, kPackLaunch or kWriteLaunch
};

struct Scratch {
  Expr elements;  // element count (may use dynamic dims)
  DType dtype = DType::F32;
  // A pack of parameters only, no larger than what it reads: done once and
  // kept between runs until one of these inputs is set again (empty: not kept).
  std::vector<std::string> kept_inputs;
};

// One kernel's schedule search over time: the best time found so far after
// each measured candidate (the first point is the heuristic schedule).
struct SearchTrace {
  std::string kernel;  // the graph nodes it fuses
  std::vector<std::pair<double, double>> progress;  // (seconds into its search, best ms so far)
  double baseline_ms = 0, best_ms = 0;  // the finalists re-measured side by side: heuristic and winner
};

struct CompiledProgram {
  std::shared_ptr<Graph> graph;
  std::vector<Edge> outputs;  // fresh contiguous buffers (copies added where needed)
  std::vector<bool> needed;   // graph nodes the outputs and state writes depend on
  std::vector<kernel::Kernel> kernels;
  std::vector<Launch> launches;  // in run order; state writes last
  std::vector<Scratch> scratch;
  std::shared_ptr<const Backend> backend;
  std::shared_ptr<Module> module;  // null when there are no kernels
  std::string source;              // what the backend rendered
  // The compile's numbers (kernels, stage seconds, search figures), its
  // human-readable report, and the schedule searches it ran.
  std::map<std::string, double> stats;
  std::string report;
  std::vector<SearchTrace> search_traces;
};

}  // namespace lumen::backend
