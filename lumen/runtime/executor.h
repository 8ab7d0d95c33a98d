// Executor — what the runtime runs a compiled graph with: run the compiled graph on a
// set of inputs and dim bindings, producing the outputs in order.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lumen/backend/compiled_program.h"
#include "lumen/core/array.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/graph.h"

namespace lumen {

// One kernel's schedule search over time (what compilation recorded).
using SearchTrace = backend::SearchTrace;

class Executor {
 public:
  virtual ~Executor() = default;
  // `inputs` holds the graph's state buffers too, by node id (see NodeArrays;
  // what Program::run passes, resolved once at set()); the graph's updates()
  // are written into them in place at the end of the run.
  virtual std::vector<Array> execute_by_node(const NodeArrays& inputs, const Bindings& bindings) = 0;
  // The same with the arrays by input name (an unknown name is an error).
  std::vector<Array> execute(const std::map<std::string, Array>& inputs, const Bindings& bindings) {
    return execute_by_node(graph().arrays_by_node(inputs), bindings);
  }
  virtual const Graph& graph() const = 0;
  virtual const char* backend_name() const = 0;
  // Numbers about compilation and the last run (kernels, arena bytes, ...).
  virtual std::map<std::string, double> stats() const { return {}; }
  // A human-readable account of compilation (e.g. the schedule search).
  virtual std::string report() const { return ""; }
  // The schedule searches compilation ran, kernel by kernel (empty without search).
  virtual std::vector<SearchTrace> search_trace() const { return {}; }
  // Graphviz of the compiled program (kernels and the buffers between them);
  // empty when the backend runs the graph as it is.
  virtual std::string kernels_dot() const { return ""; }
  // The program set `input` anew: anything kept from its old value is stale.
  virtual void invalidate(const std::string& input) { (void)input; }
};

}  // namespace lumen
