#include "lumen/nn/mlp.h"

#include "lumen/core/error.h"
#include "lumen/ops/math.h"

namespace lumen::nn {

Tensor activate(const Tensor& x, const std::string& activation) {
  if (activation == "gelu") return ops::gelu(x, false);
  if (activation == "gelu_tanh") return ops::gelu(x, true);
  if (activation == "relu") return ops::relu(x);
  if (activation == "silu") return ops::silu(x);
  fail("activation '", activation, "' is unknown (use gelu, gelu_tanh, relu or silu)");
}

MLP::MLP(Graph& g, const std::string& prefix, int64_t dim, int64_t hidden, std::string act, bool bias)
    : Module(g, prefix), fc1(g, child("fc1"), dim, hidden, bias), fc2(g, child("fc2"), hidden, dim, bias),
      activation(std::move(act)) {
  activate(g.constant(0), activation);  // rejects an unknown name at construction
  adopt(fc1);
  adopt(fc2);
}

Tensor MLP::operator()(const Tensor& x) const { return fc2(activate(fc1(x), activation)); }

SwiGLU::SwiGLU(Graph& g, const std::string& prefix, int64_t dim, int64_t hidden, bool bias)
    : Module(g, prefix),
      gate_proj(g, child("gate_proj"), dim, hidden, bias),
      up_proj(g, child("up_proj"), dim, hidden, bias),
      down_proj(g, child("down_proj"), hidden, dim, bias) {
  adopt(gate_proj);
  adopt(up_proj);
  adopt(down_proj);
}

Tensor SwiGLU::operator()(const Tensor& x) const { return down_proj(ops::silu(gate_proj(x)) * up_proj(x)); }

}  // namespace lumen::nn
