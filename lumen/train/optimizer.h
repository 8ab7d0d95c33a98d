// Optimizers as graphs: the update of every parameter (and of the optimizer's
// own state) is appended to the training graph as primitives and written
// back in place through Graph::assign, so one Program run computes the loss,
// the gradients and the update. Hyper-parameters that change during
// training are scalar inputs: "lr" (the learning rate, for schedules),
// "step" (the 1-based optimizer step, for Adam's bias correction) and, with
// gradient accumulation, "apply" (1 on the micro-step that updates).
#pragma once

#include <string>
#include <vector>

#include "lumen/core/tensor.h"

namespace lumen::train {

enum class OptimizerKind { Sgd, AdamW };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::AdamW;
  double weight_decay = 0;  // SGD: L2 added to the gradient (torch.optim.SGD); AdamW: decoupled
  double momentum = 0;      // SGD
  double dampening = 0;     // SGD
  bool nesterov = false;    // SGD
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // AdamW
  double clip_norm = 0;     // > 0: gradients scaled so their global L2 norm is at most this
  int accumulation = 1;     // micro-steps whose gradients are summed (averaged) before one update
};

// Names of the scalar inputs the update reads.
inline constexpr const char* kLearningRateInput = "lr";
inline constexpr const char* kStepInput = "step";
inline constexpr const char* kApplyInput = "apply";

// Appends the optimizer to `graph`: `params` are state tensors (whole, f32),
// `grads` their gradients. Creates the optimizer's state tensors (named
// "<param>.<slot>", e.g. "w.exp_avg") and returns their names.
std::vector<std::string> add_optimizer(Graph& graph, const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                       const OptimizerConfig& config);

const char* optimizer_name(OptimizerKind kind);
OptimizerKind optimizer_named(const std::string& name);  // "sgd", "adamw"

}  // namespace lumen::train
