// A pre-norm transformer block: x + attn(norm(x)), then x + mlp(norm(x)).
// Names follow Hugging Face Llama ("input_layernorm", "self_attn.q_proj",
// "post_attention_layernorm", "mlp.gate_proj"); GPT-style blocks use
// norm "layer" and mlp "gelu" (fc1/fc2).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "lumen/nn/attention.h"
#include "lumen/nn/mlp.h"

namespace lumen::nn {

struct TransformerConfig {
  AttentionConfig attention;
  int64_t hidden = 0;             // MLP width
  std::string norm = "rms";       // "rms" or "layer"
  double norm_eps = 1e-6;
  std::string mlp = "swiglu";     // "swiglu" or an MLP activation ("gelu", "relu", ...)
  bool mlp_bias = false;
};

class TransformerBlock : public Module {
 public:
  TransformerBlock(Graph& g, const std::string& prefix, const TransformerConfig& config);

  struct Output {
    Tensor out, keys, values;
    Tensor new_keys, new_values;  // this step's keys/values (see MultiHeadAttention)
  };
  Output operator()(const Tensor& x, const std::optional<Tensor>& past_keys = std::nullopt,
                    const std::optional<Tensor>& past_values = std::nullopt) const;

  TransformerConfig config;
  std::variant<RMSNorm, LayerNorm> input_norm, post_attention_norm;
  MultiHeadAttention self_attn;
  std::variant<SwiGLU, MLP> mlp;

 private:
  Tensor norm(const std::variant<RMSNorm, LayerNorm>& n, const Tensor& x) const;
};

// Layers applied in order.
class Sequential {
 public:
  Sequential& add(std::function<Tensor(const Tensor&)> layer) {
    layers_.push_back(std::move(layer));
    return *this;
  }
  Tensor operator()(const Tensor& x) const {
    Tensor y = x;
    for (const auto& layer : layers_) y = layer(y);
    return y;
  }
  size_t size() const { return layers_.size(); }

 private:
  std::vector<std::function<Tensor(const Tensor&)>> layers_;
};

}  // namespace lumen::nn
