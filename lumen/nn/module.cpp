#include "lumen/nn/module.h"

#include "lumen/nn/parameter_source.h"

namespace lumen::nn {

std::string Module::child(const std::string& name) const { return prefix_.empty() ? name : prefix_ + "." + name; }

Tensor Module::parameter(const std::string& name, const Shape& shape, DType dtype) {
  std::string full = child(name);
  ParameterSource* source = current_parameter_source();
  Tensor t = source ? source->declare(*graph_, full, shape, dtype) : graph_->parameter(full, shape, dtype);
  parameters_.emplace_back(full, t);
  return t;
}

void Module::adopt(const Module& c) {
  for (const auto& p : c.parameters()) parameters_.push_back(p);
}

}  // namespace lumen::nn
