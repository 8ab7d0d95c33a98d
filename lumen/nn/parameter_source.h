// ParameterSource — how a module's parameters enter the graph.
//
// By default a parameter is a graph input of its declared shape and dtype,
// named by its dotted path. A weight loader installs a source while a model
// is built (ScopedParameterSource) to declare inputs in the file's own
// storage — f16, bf16, or quantized blocks — and hand the module an
// expression over them in the declared dtype. Model code never branches on
// how weights are stored; fusion puts the conversion (or dequantization)
// inside the kernel that consumes the weight.
#pragma once

#include <string>

#include "lumen/core/graph.h"
#include "lumen/core/tensor.h"

namespace lumen::nn {

class ParameterSource {
 public:
  virtual ~ParameterSource() = default;
  // The parameter `name` of `shape`, as a tensor of `dtype` in `g`.
  virtual Tensor declare(Graph& g, const std::string& name, const Shape& shape, DType dtype) = 0;
};

// Installs `source` for parameters declared on this thread until destroyed.
class ScopedParameterSource {
 public:
  explicit ScopedParameterSource(ParameterSource& source);
  ~ScopedParameterSource();
  ScopedParameterSource(const ScopedParameterSource&) = delete;
  ScopedParameterSource& operator=(const ScopedParameterSource&) = delete;

 private:
  ParameterSource* previous_;
};

// The installed source, or nullptr (parameters are plain inputs).
ParameterSource* current_parameter_source();

}  // namespace lumen::nn
