#include "lumen/ops/normalization.h"

#include <numeric>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/ops/creation.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/precision.h"
#include "lumen/ops/reduce.h"

namespace lumen::ops {

namespace {

Axes last_dims(const Tensor& x, int count, const char* op) {
  if (count < 1 || static_cast<size_t>(count) > x.rank()) {
    fail(op, ": cannot normalise the last ", count, " dims of shape ", to_string(x.shape()));
  }
  Axes axes;
  for (int d = static_cast<int>(x.rank()) - count; d < static_cast<int>(x.rank()); ++d) axes.push_back(d);
  return axes;
}

void check_param(const std::optional<Tensor>& p, const Shape& want, const char* op, const char* name) {
  if (!p) return;
  if (p->rank() != want.size()) fail(op, ": ", name, " has shape ", to_string(p->shape()), ", expected ", to_string(want));
  for (size_t d = 0; d < want.size(); ++d) {
    if (simplify(p->shape()[d]) != simplify(want[d])) {
      fail(op, ": ", name, " has shape ", to_string(p->shape()), ", expected ", to_string(want));
    }
  }
}

double machine_epsilon(DType d) {
  switch (d) {
    case DType::F16: return 0.0009765625;
    case DType::BF16: return 0.0078125;
    case DType::F64: return 2.220446049250313e-16;
    default: return 1.1920928955078125e-07;
  }
}

// Channel parameter [C] viewed as [1, C, 1, ...] for an input of rank `rank`.
Tensor per_channel(const Tensor& p, size_t rank) {
  Shape s(rank, Expr(1));
  s[1] = p.shape()[0];
  return p.reshape(s);
}

}  // namespace

Tensor layer_norm(const Tensor& x, int normalized_dims, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps) {
  if (!is_float(x.dtype())) fail("layer_norm: needs a float tensor, got ", dtype_name(x.dtype()));
  Axes axes = last_dims(x, normalized_dims, "layer_norm");
  Shape normalized(x.shape().end() - normalized_dims, x.shape().end());
  check_param(weight, normalized, "layer_norm", "weight");
  check_param(bias, normalized, "layer_norm", "bias");
  return compute_in_f32(x, [&](const Tensor& f) {
    Tensor centred = f - mean(f, axes, true);
    Tensor variance = mean(centred * centred, axes, true);
    Tensor y = centred * (variance + eps).sqrt().recip();
    if (weight) y = y * weight->cast(f.dtype());
    if (bias) y = y + bias->cast(f.dtype());
    return y;
  });
}

Tensor rms_norm(const Tensor& x, int normalized_dims, const std::optional<Tensor>& weight, std::optional<double> eps) {
  if (!is_float(x.dtype())) fail("rms_norm: needs a float tensor, got ", dtype_name(x.dtype()));
  Axes axes = last_dims(x, normalized_dims, "rms_norm");
  check_param(weight, Shape(x.shape().end() - normalized_dims, x.shape().end()), "rms_norm", "weight");
  double e = eps.value_or(machine_epsilon(x.dtype()));
  return compute_in_f32(x, [&](const Tensor& f) {
    Tensor y = f * (mean(f * f, axes, true) + e).sqrt().recip();
    return weight ? y * weight->cast(f.dtype()) : y;
  });
}

Tensor group_norm(const Tensor& x, int64_t groups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps) {
  if (x.rank() < 2) fail("group_norm: expects [N, C, ...], got ", to_string(x.shape()));
  const Expr& channels = x.shape()[1];
  if (groups <= 0 || !channels.is_const() || channels.value() % groups != 0) {
    fail("group_norm: ", channels, " channels cannot be split into ", groups, " groups (shape ", to_string(x.shape()), ")");
  }
  check_param(weight, {channels}, "group_norm", "weight");
  check_param(bias, {channels}, "group_norm", "bias");
  Shape grouped{x.shape()[0], Expr(groups), Expr(-1)};
  Tensor g = x.reshape(grouped);
  Tensor y = layer_norm(g, 1, std::nullopt, std::nullopt, eps).reshape(x.shape());
  if (weight) y = y * per_channel(*weight, x.rank());
  if (bias) y = y + per_channel(*bias, x.rank());
  return y;
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, double eps) {
  if (x.rank() < 2) fail("batch_norm: expects [N, C, ...], got ", to_string(x.shape()));
  Shape c{x.shape()[1]};
  check_param(running_mean, c, "batch_norm", "running_mean");
  check_param(running_var, c, "batch_norm", "running_var");
  check_param(weight, c, "batch_norm", "weight");
  check_param(bias, c, "batch_norm", "bias");
  Tensor y = (x - per_channel(running_mean, x.rank())) * (per_channel(running_var, x.rank()) + eps).sqrt().recip();
  if (weight) y = y * per_channel(*weight, x.rank());
  if (bias) y = y + per_channel(*bias, x.rank());
  return y;
}

Tensor dropout(const Tensor& x, double p, bool training, uint64_t seed) {
  if (p < 0 || p > 1) fail("dropout: p must be in [0, 1], got ", p);
  if (!training || p == 0) return x;
  if (p == 1) return zeros_like(x);
  Tensor keep = rand(*x.graph(), x.shape(), seed).less_than(x.graph()->constant(1.0 - p, DType::F32));
  return where(keep, x * (1.0 / (1.0 - p)), scalar_like(x, 0, x.dtype()));
}

}  // namespace lumen::ops
