// StateParameters — while installed (nn::ScopedParameterSource), a module's
// parameters are declared as Graph::state, the persistent tensors a Trainer
// updates in place, instead of graph inputs.
#pragma once

#include "lumen/nn/parameter_source.h"

namespace lumen::train {

class StateParameters : public nn::ParameterSource {
 public:
  Tensor declare(Graph& g, const std::string& name, const Shape& shape, DType dtype) override {
    return g.state(name, shape, dtype);
  }
};

}  // namespace lumen::train
