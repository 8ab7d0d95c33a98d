// Normalisation layers (functional form) and dropout.
#pragma once

#include <cstdint>
#include <optional>

#include "lumen/core/tensor.h"

namespace lumen::ops {

// Normalises over the last `normalized_dims` dims.
Tensor layer_norm(const Tensor& x, int normalized_dims, const std::optional<Tensor>& weight = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5);
// x / sqrt(mean(x²) + eps) · weight; eps defaults to the dtype's machine epsilon like torch.
Tensor rms_norm(const Tensor& x, int normalized_dims, const std::optional<Tensor>& weight = std::nullopt,
                std::optional<double> eps = std::nullopt);
// x [N, C, *]: statistics per (sample, group of C/groups channels).
Tensor group_norm(const Tensor& x, int64_t groups, const std::optional<Tensor>& weight = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5);
// Inference batch norm with running statistics, channels at dim 1.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const std::optional<Tensor>& weight = std::nullopt, const std::optional<Tensor>& bias = std::nullopt,
                  double eps = 1e-5);
// Identity at inference; with training, zeroes a seeded random p-fraction and scales by 1/(1-p).
Tensor dropout(const Tensor& x, double p = 0.5, bool training = false, uint64_t seed = 0);

}  // namespace lumen::ops
