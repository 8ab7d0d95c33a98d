// Convolution, pooling and resizing, built from views (pad + unfold windows),
// broadcast Mul + SumReduce, and small iota-built matrices.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "lumen/core/tensor.h"

namespace lumen::ops {

using Pair = std::array<int64_t, 2>;

// x [N, C, L], weight [O, C/groups, K].
Tensor conv1d(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
              int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);
// x [N, C, H, W], weight [O, C/groups, KH, KW].
Tensor conv2d(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
              Pair stride = {1, 1}, Pair padding = {0, 0}, Pair dilation = {1, 1}, int64_t groups = 1);
// x [N, C, H, W], weight [C, O/groups, KH, KW].
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
                        Pair stride = {1, 1}, Pair padding = {0, 0}, Pair output_padding = {0, 0},
                        int64_t groups = 1, Pair dilation = {1, 1});
// stride defaults to the kernel size when given as {0, 0}.
Tensor max_pool2d(const Tensor& x, Pair kernel, Pair stride = {0, 0}, Pair padding = {0, 0}, Pair dilation = {1, 1},
                  bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, Pair kernel, Pair stride = {0, 0}, Pair padding = {0, 0}, bool ceil_mode = false,
                  bool count_include_pad = true);
Tensor adaptive_avg_pool2d(const Tensor& x, Pair output_size);
// mode "nearest" or "bilinear"; size wins over scale when both are given.
Tensor interpolate(const Tensor& x, std::optional<Pair> size, std::optional<std::array<double, 2>> scale_factor,
                   const std::string& mode = "nearest", bool align_corners = false);

}  // namespace lumen::ops
