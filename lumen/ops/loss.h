// Loss functions.
#pragma once

#include <optional>
#include <string>

#include "lumen/core/tensor.h"

namespace lumen::ops {

// input [N, C] (or [N, C, d...], or [C]); target: i32 class indices of shape
// [N] ([N, d...], []) or float probabilities shaped like input.
// reduction: "mean", "sum" or "none".
Tensor cross_entropy(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                     double label_smoothing = 0.0);
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");

}  // namespace lumen::ops
