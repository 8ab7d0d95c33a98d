// Feed-forward blocks: a two-layer MLP and the gated SwiGLU of Llama-family models.
#pragma once

#include <string>

#include "lumen/nn/layers.h"

namespace lumen::nn {

// fc2(activation(fc1(x))); activation: "gelu", "gelu_tanh", "relu" or "silu".
class MLP : public Module {
 public:
  MLP(Graph& g, const std::string& prefix, int64_t dim, int64_t hidden, std::string activation = "gelu",
      bool bias = true);
  Tensor operator()(const Tensor& x) const;
  Linear fc1, fc2;
  std::string activation;
};

// down_proj(silu(gate_proj(x)) · up_proj(x))
class SwiGLU : public Module {
 public:
  SwiGLU(Graph& g, const std::string& prefix, int64_t dim, int64_t hidden, bool bias = false);
  Tensor operator()(const Tensor& x) const;
  Linear gate_proj, up_proj, down_proj;
};

// Applies `activation` by name (the names MLP accepts).
Tensor activate(const Tensor& x, const std::string& activation);

}  // namespace lumen::nn
