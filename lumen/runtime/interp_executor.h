// InterpExecutor — runs a graph on the reference interpreter.
#pragma once

#include <memory>
#include <vector>

#include "lumen/runtime/executor.h"

namespace lumen {

class Graph;
struct Edge;

class InterpExecutor : public Executor {
 public:
  InterpExecutor(std::shared_ptr<const Graph> graph, std::vector<Edge> outputs);

  // Evaluates the outputs and the state updates' values, then writes the
  // values through their views into the state buffers.
  std::vector<Array> execute_by_node(const NodeArrays& inputs, const Bindings& bindings) override;
  const Graph& graph() const override { return *graph_; }
  const char* backend_name() const override { return "interp"; }

 private:
  std::shared_ptr<const Graph> graph_;
  std::vector<Edge> outputs_;
};

}  // namespace lumen
