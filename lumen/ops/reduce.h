// Reductions over any set of axes (empty = all), scans, and the softmax
// family. Integer sums stay i32 (PyTorch would widen to int64).
#pragma once

#include <optional>
#include <vector>

#include "lumen/core/tensor.h"

namespace lumen::ops {

using Axes = std::vector<int>;

Tensor sum(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor amax(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor prod(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor var(const Tensor& x, const Axes& axes = {}, double correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, const Axes& axes = {}, double correction = 1, bool keepdim = false);
Tensor logsumexp(const Tensor& x, const Axes& axes, bool keepdim = false);
Tensor all(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor any(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
// Index of the first maximum (NaN counts as the maximum, like PyTorch); with
// no axis, of the flattened tensor. Returns i32.
// The index (i64, as PyTorch) of the first largest / smallest element; NaN counts as largest.
Tensor argmax(const Tensor& x, std::optional<int> axis = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int> axis = std::nullopt, bool keepdim = false);
Tensor cumsum(const Tensor& x, int axis);
Tensor cumprod(const Tensor& x, int axis);

Tensor softmax(const Tensor& x, int axis = -1);
Tensor log_softmax(const Tensor& x, int axis = -1);

// Sorted, de-duplicated, non-negative axes (all axes when `axes` is empty).
std::vector<int> normalize_axes(const Tensor& x, const Axes& axes, const char* op);
// Product of the dims at `axes`, as an Expr.
Expr axes_numel(const Tensor& x, const std::vector<int>& axes);

}  // namespace lumen::ops
