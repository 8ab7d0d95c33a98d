// Module — a layer whose parameters are named graph inputs. A parameter's
// name is its dotted path ("layers.0.attn.q_proj.weight"), the same naming
// PyTorch state dicts use, so weights load by name.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lumen/core/graph.h"
#include "lumen/core/tensor.h"

namespace lumen::nn {

class Module {
 public:
  Module(Graph& graph, std::string prefix) : graph_(&graph), prefix_(std::move(prefix)) {}
  virtual ~Module() = default;
  Module(const Module&) = default;
  Module& operator=(const Module&) = default;

  // Every parameter of this module and its children, by full name.
  const std::vector<std::pair<std::string, Tensor>>& parameters() const { return parameters_; }
  const std::string& prefix() const { return prefix_; }
  Graph& graph() const { return *graph_; }

 protected:
  // Declares a parameter input named prefix + "." + name.
  Tensor parameter(const std::string& name, const Shape& shape, DType dtype = DType::F32);
  // The prefix for a child module: prefix + "." + name.
  std::string child(const std::string& name) const;
  // Adopts a child's parameters into this module's list.
  void adopt(const Module& child);

 private:
  Graph* graph_;
  std::string prefix_;
  std::vector<std::pair<std::string, Tensor>> parameters_;
};

}  // namespace lumen::nn
