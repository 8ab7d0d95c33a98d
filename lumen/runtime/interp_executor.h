// InterpExecutor — runs a graph on the reference interpreter.
#pragma once

#include <memory>
#include <vector>

#include "lumen/backend/interp/interpreter.h"
#include "lumen/runtime/executor.h"

namespace lumen {

class InterpExecutor : public Executor {
 public:
  InterpExecutor(std::shared_ptr<const Graph> graph, std::vector<Edge> outputs)
      : graph_(std::move(graph)), outputs_(std::move(outputs)) {}

  std::vector<Array> execute(const std::map<std::string, Array>& inputs, const Bindings& bindings) override {
    return interp::Interpreter(*graph_).run(inputs, outputs_, bindings);
  }
  const char* backend_name() const override { return "interp"; }

 private:
  std::shared_ptr<const Graph> graph_;
  std::vector<Edge> outputs_;
};

}  // namespace lumen
