// Linear algebra and network layers: MatMul, Gemm, Einsum, Conv,
// ConvTranspose, pools and normalisations.
#include <array>
#include <cmath>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

Value same_type(NodeContext& n, const Tensor& t) { return Value::of(t, n.onnx_type(0)); }

std::vector<Value> matmul(NodeContext& n) { return {same_type(n, ops::matmul(n.in(0), n.in(1)))}; }

std::vector<Value> gemm(NodeContext& n) {
  Tensor a = n.in(0), b = n.in(1);
  if (n.attr_int("transA", 0)) a = a.transpose(0, 1);
  if (n.attr_int("transB", 0)) b = b.transpose(0, 1);
  double alpha = n.attr_float("alpha", 1.0), beta = n.attr_float("beta", 1.0);
  Tensor y = ops::matmul(a, b);
  if (alpha != 1.0) y = y * alpha;
  if (std::optional<Tensor> c = n.optional(2)) y = ops::add(y, beta == 1.0 ? *c : *c * beta);
  return {same_type(n, y)};
}

std::vector<Value> einsum(NodeContext& n) {
  std::vector<Tensor> operands;
  for (size_t k = 0; k < n.num_inputs(); ++k) operands.push_back(n.in(k));
  return {same_type(n, ops::einsum(n.attr_string("equation", ""), operands))};
}

// Window geometry of a 1-D or 2-D conv / pool: per spatial dim, the kernel,
// stride, dilation and (begin, end) padding after auto_pad.
struct Windows {
  std::vector<int64_t> kernel, strides, dilations, begin, end;
};

Windows windows(NodeContext& n, const Tensor& x, std::vector<int64_t> kernel, size_t max_spatial = 2) {
  size_t spatial = x.rank() - 2;
  if (spatial < 1 || spatial > max_spatial) {
    n.unsupported(std::to_string(spatial) + "-D spatial input (lumen has 1-D and 2-D" + (max_spatial > 2 ? ", 3-D pools" : "") + ")");
  }
  Windows w;
  w.kernel = n.attr_ints("kernel_shape", kernel);
  if (w.kernel.size() != spatial) fail("onnx: ", n.where(), ": kernel_shape has ", w.kernel.size(), " dims for ", spatial);
  w.strides = n.attr_ints("strides", std::vector<int64_t>(spatial, 1));
  w.dilations = n.attr_ints("dilations", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (pads.size() != 2 * spatial || w.strides.size() != spatial || w.dilations.size() != spatial) {
    fail("onnx: ", n.where(), ": pads / strides / dilations do not match ", spatial, " spatial dims");
  }
  for (size_t d = 0; d < spatial; ++d) {
    if (w.kernel[d] < 1 || w.strides[d] < 1 || w.dilations[d] < 1 || pads[d] < 0 || pads[d + spatial] < 0) {
      fail("onnx: ", n.where(), ": kernel_shape ", shape_string(w.kernel), ", strides ", shape_string(w.strides),
           ", dilations ", shape_string(w.dilations), " must be positive and pads ", shape_string(pads), " non-negative");
    }
  }
  for (size_t d = 0; d < spatial; ++d) {
    w.begin.push_back(pads[d]);
    w.end.push_back(pads[d + spatial]);
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const Expr& in = x.shape()[2 + d];
      if (!in.is_const()) n.unsupported("auto_pad over a dynamic dim");
      int64_t out = (in.value() + w.strides[d] - 1) / w.strides[d];
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[d] + (w.kernel[d] - 1) * w.dilations[d] + 1 - in.value());
      w.begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : (total + 1) / 2;
      w.end[d] = total - w.begin[d];
    } else if (auto_pad == "VALID") {
      w.begin[d] = w.end[d] = 0;
    } else if (auto_pad != "NOTSET") {
      n.unsupported_attribute("auto_pad", "'" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
    }
  }
  return w;
}

// 1-D windows are run as 2-D with a height of 1.
Windows as_2d(Windows w) {
  if (w.kernel.size() == 2) return w;
  auto lift = [](std::vector<int64_t>& v, int64_t one) { v.insert(v.begin(), one); };
  lift(w.kernel, 1);
  lift(w.strides, 1);
  lift(w.dilations, 1);
  lift(w.begin, 0);
  lift(w.end, 0);
  return w;
}

// Pads x's spatial dims where begin and end differ (lumen's windows are symmetric);
// returns the symmetric padding left to apply.
ops::Pair asymmetric_pad(Tensor& x, const Windows& w, double fill) {
  ops::Pair sym{std::min(w.begin[0], w.end[0]), std::min(w.begin[1], w.end[1])};
  if (w.begin[0] == w.end[0] && w.begin[1] == w.end[1]) return sym;
  std::vector<int64_t> pads{w.begin[1] - sym[1], w.end[1] - sym[1], w.begin[0] - sym[0], w.end[0] - sym[0]};
  x = ops::pad(x, pads, "constant", fill);
  return sym;
}

// Half-precision operands of a conv in f32: the result is rounded once to the
// node's type on the way out (as ONNX Runtime and the reference accumulate).
Tensor widened(const Tensor& t) { return t.dtype() == DType::F16 || t.dtype() == DType::BF16 ? t.cast(DType::F32) : t; }

std::vector<Value> conv(NodeContext& n) {
  Tensor x = widened(n.in(0)), weight = widened(n.in(1));
  std::optional<Tensor> bias = n.optional(2);
  if (bias) bias = widened(*bias);
  std::vector<int64_t> kernel;
  for (size_t d = 2; d < weight.rank(); ++d) {
    if (!weight.shape()[d].is_const()) n.unsupported("a dynamic kernel size");
    kernel.push_back(weight.shape()[d].value());
  }
  Windows w = windows(n, x, kernel);
  int64_t group = n.attr_int("group", 1);
  bool one_d = x.rank() == 3;
  if (one_d) {
    x = x.unsqueeze(2);
    weight = weight.unsqueeze(2);
  }
  w = as_2d(w);
  ops::Pair padding = asymmetric_pad(x, w, 0);
  Tensor y = ops::conv2d(x, weight, bias, {w.strides[0], w.strides[1]}, padding, {w.dilations[0], w.dilations[1]}, group);
  return {same_type(n, one_d ? y.squeeze(2) : y)};
}

// ConvTranspose's padding from output_shape or auto_pad SAME_*: the total is
// what the full output exceeds the target by, split with the odd element at
// the end for SAME_UPPER, at the start otherwise (the spec's rule, with
// floor division: a negative total, an output_shape past the full output,
// extends it with zeros).
void transposed_padding(NodeContext& n, const Tensor& x, Windows& w, const std::vector<int64_t>& out_pad) {
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> output_shape = n.attr_ints("output_shape");
  bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (output_shape.empty() && !same) return;
  size_t spatial = w.kernel.size();
  if (!output_shape.empty() && output_shape.size() != spatial) {
    fail("onnx: ", n.where(), ": output_shape has ", output_shape.size(), " entries for ", spatial, " spatial dims");
  }
  for (size_t d = 0; d < spatial; ++d) {
    const Expr& in = x.shape()[2 + d];
    if (!in.is_const()) n.unsupported("output_shape / auto_pad over a dynamic dim");
    int64_t full = w.strides[d] * (in.value() - 1) + out_pad[d] + (w.kernel[d] - 1) * w.dilations[d] + 1;
    int64_t target = output_shape.empty() ? in.value() * w.strides[d] : output_shape[d];
    int64_t total = full - target;
    int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor(total / 2)
    w.begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
    w.end[d] = total - w.begin[d];
  }
}

std::vector<Value> conv_transpose(NodeContext& n) {
  Tensor x = n.in(0), weight = n.in(1);
  std::vector<int64_t> kernel;
  for (size_t d = 2; d < weight.rank(); ++d) kernel.push_back(weight.shape()[d].value());
  Windows w = windows(n, x, kernel);
  std::vector<int64_t> out_pad = n.attr_ints("output_padding", std::vector<int64_t>(x.rank() - 2, 0));
  if (out_pad.size() != kernel.size()) fail("onnx: ", n.where(), ": output_padding has ", out_pad.size(), " entries");
  transposed_padding(n, x, w, out_pad);
  int64_t group = n.attr_int("group", 1);
  bool one_d = x.rank() == 3;
  if (one_d) {
    x = x.unsqueeze(2);
    weight = weight.unsqueeze(2);
    out_pad.insert(out_pad.begin(), 0);
  }
  w = as_2d(w);
  // Symmetric padding as lumen's op takes it, then the rest cropped at one end
  // (or, for negative padding, zeros added; the bias then comes after).
  ops::Pair sym{std::max<int64_t>(0, std::min(w.begin[0], w.end[0])), std::max<int64_t>(0, std::min(w.begin[1], w.end[1]))};
  bool extends = std::min({w.begin[0], w.begin[1], w.end[0], w.end[1]}) < 0;
  std::optional<Tensor> bias = n.optional(2);
  Tensor y = ops::conv_transpose2d(x, weight, extends ? std::nullopt : bias, {w.strides[0], w.strides[1]}, sym,
                                   {out_pad[0], out_pad[1]}, group, {w.dilations[0], w.dilations[1]});
  for (size_t d = 0; d < 2; ++d) {
    int64_t crop_begin = w.begin[d] - sym[d], crop_end = w.end[d] - sym[d];
    int axis = static_cast<int>(2 + d);
    if (crop_begin < 0 || crop_end < 0) {
      std::vector<int64_t> pads(8, 0);
      pads[2 * (1 - d)] = std::max<int64_t>(0, -crop_begin);
      pads[2 * (1 - d) + 1] = std::max<int64_t>(0, -crop_end);
      y = ops::pad(y, pads, "constant", 0);
    }
    const Expr& len = y.shape()[2 + d];
    if (crop_begin > 0 || crop_end > 0) {
      y = y.slice(axis, Expr(std::max<int64_t>(0, crop_begin)), simplify(len - Expr(std::max<int64_t>(0, crop_end))));
    }
  }
  if (extends && bias) y = ops::add(y, bias->reshape({Expr(1), bias->shape()[0], Expr(1), Expr(1)}));
  return {same_type(n, one_d ? y.squeeze(2) : y)};
}

// Pools over any number of spatial dims: pad, unfold each spatial dim into
// [windows, kernel], reduce the kernel dims (used for 3-D inputs).
template <bool Max>
Tensor pool_nd(NodeContext& n, const Tensor& x, const Windows& w, bool ceil_mode, bool include_pad) {
  size_t spatial = w.kernel.size();
  std::vector<int64_t> pads(2 * x.rank(), 0);
  int64_t volume = 1;
  for (size_t d = 0; d < spatial; ++d) {
    const Expr& in = x.shape()[2 + d];
    if (!in.is_const()) n.unsupported("pooling over a dynamic dim");
    int64_t span = w.dilations[d] * (w.kernel[d] - 1) + 1, padded = in.value() + w.begin[d] + w.end[d];
    int64_t extra = 0;
    if (ceil_mode) {
      int64_t out = (padded - span + w.strides[d] - 1) / w.strides[d] + 1;
      if ((out - 1) * w.strides[d] >= in.value() + w.begin[d]) --out;  // the last window starts inside
      extra = std::max<int64_t>(0, (out - 1) * w.strides[d] + span - padded);
    }
    size_t from_end = x.rank() - 1 - (2 + d);
    pads[2 * from_end] = w.begin[d];
    pads[2 * from_end + 1] = w.end[d] + extra;
    volume *= w.kernel[d];
  }
  auto windows_of = [&](Tensor t) {
    for (size_t d = spatial; d-- > 0;) t = t.unfold(static_cast<int>(2 + d), w.kernel[d], w.strides[d], w.dilations[d]);
    for (size_t d = spatial; d-- > 0;) t = Max ? t.max_reduce(static_cast<int>(3 + 2 * d)) : t.sum_reduce(static_cast<int>(3 + 2 * d));
    return t;
  };
  if (Max) return windows_of(ops::pad(x, pads, "constant", -INFINITY));
  Tensor sum = windows_of(ops::pad(x, pads, "constant", 0));
  if (include_pad && !ceil_mode) return sum * (1.0 / static_cast<double>(volume));
  std::vector<int64_t> count_pads = pads;
  if (include_pad) {  // padding counts, the ceil_mode overhang does not
    for (size_t d = 0; d < spatial; ++d) count_pads[2 * (x.rank() - 1 - (2 + d))] = 0, count_pads[2 * (x.rank() - 1 - (2 + d)) + 1] -= w.end[d];
  }
  Shape ones_shape = x.shape();
  for (size_t d = 0; d < spatial; ++d) {
    if (include_pad) ones_shape[2 + d] = Expr(x.shape()[2 + d].value() + w.begin[d] + w.end[d]);
  }
  Tensor ones = ops::ones(n.graph(), ones_shape, x.dtype());
  Tensor count = windows_of(ops::pad(ones, count_pads, "constant", 0));
  return ops::div(sum, count);
}

template <bool Max>
std::vector<Value> pool(NodeContext& n) {
  Tensor x = n.in(0);
  Windows w = windows(n, x, {}, 3);
  if (x.rank() == 5) {
    bool ceil_mode = n.attr_int("ceil_mode", 0) != 0;
    bool include_pad = n.attr_int("count_include_pad", 0) != 0;
    if (Max && n.attr_int("storage_order", 0) != 0) n.unsupported_attribute("storage_order", "must be 0");
    if (Max && n.output_used(1)) n.unsupported("MaxPool's Indices output");
    return {same_type(n, pool_nd<Max>(n, x, w, ceil_mode, include_pad))};
  }
  bool ceil_mode = n.attr_int("ceil_mode", 0) != 0;
  bool include_pad = n.attr_int("count_include_pad", 0) != 0;
  if (Max && n.attr_int("storage_order", 0) != 0) n.unsupported_attribute("storage_order", "must be 0");
  if (Max && n.output_used(1)) n.unsupported("MaxPool's Indices output");
  bool one_d = x.rank() == 3;
  if (one_d) x = x.unsqueeze(2);
  w = as_2d(w);
  std::optional<Tensor> ones;  // average over asymmetric pads excluding them: sums / counts of real elements
  if (!Max && !include_pad && w.begin != w.end) ones = ops::ones(n.graph(), {Expr(1), Expr(1), x.shape()[2], x.shape()[3]}, x.dtype());
  ops::Pair padding = asymmetric_pad(x, w, Max ? -INFINITY : 0);
  if (ones) asymmetric_pad(*ones, w, 0);
  ops::Pair kernel{w.kernel[0], w.kernel[1]}, stride{w.strides[0], w.strides[1]};
  Tensor y;
  if (Max) {
    if (2 * padding[0] > kernel[0] || 2 * padding[1] > kernel[1]) {  // lumen's pool pads up to half a window: pad first
      x = ops::pad(x, {padding[1], padding[1], padding[0], padding[0]}, "constant", -INFINITY);
      padding = {0, 0};
    }
    y = ops::max_pool2d(x, kernel, stride, padding, {w.dilations[0], w.dilations[1]}, ceil_mode);
  } else {
    if (w.dilations[0] != 1 || w.dilations[1] != 1) n.unsupported_attribute("dilations", "AveragePool with dilation");
    y = ops::avg_pool2d(x, kernel, stride, padding, ceil_mode, include_pad || ones.has_value());
    if (ones) y = ops::div(y, ops::avg_pool2d(*ones, kernel, stride, padding, ceil_mode, true));
  }
  return {same_type(n, one_d ? y.squeeze(2) : y)};
}

// (sum over the window of |x|^p)^(1/p): an average pool counting the padding, times the window size.
std::vector<Value> lp_pool(NodeContext& n) {
  Tensor x = n.in(0);
  Windows w = windows(n, x, {});
  double p = static_cast<double>(n.attr_int("p", 2));
  bool ceil_mode = n.attr_int("ceil_mode", 0) != 0;
  bool one_d = x.rank() == 3;
  if (one_d) x = x.unsqueeze(2);
  w = as_2d(w);
  if (w.dilations[0] != 1 || w.dilations[1] != 1) n.unsupported_attribute("dilations", "LpPool with dilation");
  Tensor powered = ops::pow(ops::abs(x), p);
  ops::Pair padding = asymmetric_pad(powered, w, 0);
  Tensor avg = ops::avg_pool2d(powered, {w.kernel[0], w.kernel[1]}, {w.strides[0], w.strides[1]}, padding, ceil_mode, true);
  Tensor y = ops::pow(avg * static_cast<double>(w.kernel[0] * w.kernel[1]), 1.0 / p);
  return {same_type(n, one_d ? y.squeeze(2) : y)};
}

std::vector<int> spatial_axes(const Tensor& x) {
  std::vector<int> axes;
  for (size_t d = 2; d < x.rank(); ++d) axes.push_back(static_cast<int>(d));
  return axes;
}

std::vector<Value> global_average_pool(NodeContext& n) {
  Tensor x = n.in(0);
  return {same_type(n, ops::mean(x, spatial_axes(x), true))};
}

std::vector<Value> global_max_pool(NodeContext& n) {
  Tensor x = n.in(0);
  return {same_type(n, ops::amax(x, spatial_axes(x), true))};
}

// v [C] viewed to broadcast along dim 1 of a rank-`rank` tensor.
Tensor per_channel(const Tensor& v, size_t rank) {
  Shape s(rank, Expr(1));
  s[1] = v.shape()[0];
  return v.reshape(s);
}

std::vector<Value> batch_norm(NodeContext& n) {
  if (n.attr_int("training_mode", 0) != 0) n.unsupported_attribute("training_mode", "must be 0 (inference)");
  n.attr_float("momentum", 0.9);
  Tensor x = n.in(0);
  double eps = n.attr_float("epsilon", 1e-5);
  Tensor scale = n.in(1), bias = n.in(2), mean = n.in(3), var = n.in(4);
  Tensor y = ops::div(ops::sub(x, per_channel(mean, x.rank())), ops::sqrt(per_channel(var, x.rank()) + eps));
  y = ops::add(ops::mul(y, per_channel(scale, x.rank())), per_channel(bias, x.rank()));
  return {same_type(n, y.cast(x.dtype()))};
}

// (x - mean) / sqrt(var + eps) over `axes`, computed in f32.
Tensor normalise(const Tensor& x, const std::vector<int>& axes, double eps) {
  Tensor f = x.dtype() == DType::F32 ? x : x.cast(DType::F32);
  Tensor centred = ops::sub(f, ops::mean(f, axes, true));
  return ops::mul(centred, ops::rsqrt(ops::mean(ops::mul(centred, centred), axes, true) + eps));
}

std::vector<Value> instance_norm(NodeContext& n) {
  Tensor x = n.in(0);
  Tensor y = normalise(x, spatial_axes(x), n.attr_float("epsilon", 1e-5));
  y = ops::add(ops::mul(y, per_channel(n.in(1), x.rank())), per_channel(n.in(2), x.rank()));
  return {same_type(n, y.cast(x.dtype()))};
}

std::vector<Value> layer_norm(NodeContext& n) {
  Tensor x = n.in(0);
  int axis = onnx_axis(n, n.attr_int("axis", -1), x.rank());
  n.attr_int("stash_type", 1);
  std::vector<int> axes;
  for (size_t d = static_cast<size_t>(axis); d < x.rank(); ++d) axes.push_back(static_cast<int>(d));
  double eps = n.attr_float("epsilon", 1e-5);
  Tensor f = x.dtype() == DType::F32 ? x : x.cast(DType::F32);
  Tensor mean = ops::mean(f, axes, true);
  Tensor centred = ops::sub(f, mean);
  Tensor inv_std = ops::rsqrt(ops::mean(ops::mul(centred, centred), axes, true) + eps);
  Tensor y = ops::mul(ops::mul(centred, inv_std), n.in(1).cast(DType::F32));
  if (std::optional<Tensor> b = n.optional(2)) y = ops::add(y, b->cast(DType::F32));
  return {same_type(n, y.cast(x.dtype())), Value::of(mean, kFloat), Value::of(inv_std, kFloat)};
}

std::vector<Value> rms_norm(NodeContext& n) {
  Tensor x = n.in(0);
  int axis = onnx_axis(n, n.attr_int("axis", -1), x.rank());
  n.attr_int("stash_type", 1);
  std::vector<int> axes;
  for (size_t d = static_cast<size_t>(axis); d < x.rank(); ++d) axes.push_back(static_cast<int>(d));
  double eps = n.attr_float("epsilon", 1e-5);
  Tensor f = x.dtype() == DType::F32 ? x : x.cast(DType::F32);
  Tensor y = ops::mul(f, ops::rsqrt(ops::mean(ops::mul(f, f), axes, true) + eps));
  y = ops::mul(y, n.in(1).cast(DType::F32));
  return {same_type(n, y.cast(x.dtype()))};
}

std::vector<Value> group_norm(NodeContext& n) {
  Tensor x = n.in(0);
  int64_t groups = n.attr_int("num_groups");
  n.attr_int("stash_type", 1);
  if (n.opset() < 21) n.unsupported("GroupNormalization before opset 21 (per-group scale)");
  double eps = n.attr_float("epsilon", 1e-5);
  Shape grouped{x.shape()[0], Expr(groups), Expr(-1)};
  Tensor y = normalise(ops::reshape(x, grouped), {2}, eps).reshape(x.shape());
  y = ops::add(ops::mul(y, per_channel(n.in(1), x.rank())), per_channel(n.in(2), x.rank()));
  return {same_type(n, y.cast(x.dtype()))};
}

std::vector<Value> lp_norm(NodeContext& n) {
  Tensor x = n.in(0);
  int axis = onnx_axis(n, n.attr_int("axis", -1), x.rank());
  int64_t p = n.attr_int("p", 2);
  if (p != 1 && p != 2) n.unsupported_attribute("p", "must be 1 or 2");
  Tensor norm = p == 1 ? ops::sum(ops::abs(x), {axis}, true) : ops::sqrt(ops::sum(ops::mul(x, x), {axis}, true));
  // A zero norm gives 0 (as the reference), not NaN.
  Tensor zero = ops::eq(norm, norm.scalar(0));
  return {same_type(n, ops::where(zero, ops::zeros_like(x), ops::div(x, ops::where(zero, ops::ones_like(norm), norm))))};
}

std::vector<Value> mean_variance_norm(NodeContext& n) {
  Tensor x = n.in(0);
  std::vector<int> axes;
  for (int64_t a : n.attr_ints("axes", {0, 2, 3})) axes.push_back(onnx_axis(n, a, x.rank(), "axes"));
  Tensor centred = ops::sub(x, ops::mean(x, axes, true));
  return {same_type(n, ops::div(centred, ops::sqrt(ops::mean(ops::mul(centred, centred), axes, true)) + 1e-9))};
}

// Local response normalization across channels: x / (bias + alpha / size *
// sum of x^2 over the window of `size` channels around c)^beta.
std::vector<Value> lrn(NodeContext& n) {
  Tensor x = n.in(0);
  int64_t size = n.attr_int("size");
  double alpha = n.attr_float("alpha", 1e-4), beta = n.attr_float("beta", 0.75), bias = n.attr_float("bias", 1.0);
  if (x.rank() < 3 || size < 1) fail("onnx: ", n.where(), ": input ", to_string(x.shape()), " must be [N, C, ...] and size positive");
  const Expr& channels = x.shape()[1];
  if (!channels.is_const()) n.unsupported("LRN over a dynamic channel count");
  Tensor f = x.cast(DType::F32);
  Tensor square = ops::mul(f, f);
  std::vector<int64_t> pads(2 * x.rank(), 0);
  size_t from_end = x.rank() - 2;  // the channel dim, counted from the last
  pads[2 * from_end] = (size - 1) / 2;
  pads[2 * from_end + 1] = size - 1 - (size - 1) / 2;
  Tensor padded = ops::pad(square, pads, "constant", 0);
  Tensor window = padded.slice(1, Expr(0), channels);
  for (int64_t k = 1; k < size; ++k) window = ops::add(window, padded.slice(1, Expr(k), Expr(k + channels.value())));
  Tensor scale = ops::pow(ops::add(window * (alpha / static_cast<double>(size)), window.scalar(bias)), beta);
  return {same_type(n, ops::div(f, scale).cast(x.dtype()))};
}

// Determinant of [..., m, m] by cofactor expansion along the first row (m <= 4).
Tensor determinant(const Tensor& a, int64_t m) {
  int r = static_cast<int>(a.rank());
  auto at = [&](int64_t i, int64_t j) {
    return a.slice(r - 2, Expr(i), Expr(i + 1)).slice(r - 1, Expr(j), Expr(j + 1)).squeeze(r - 1).squeeze(r - 2);
  };
  if (m == 1) return at(0, 0);
  std::optional<Tensor> sum;
  for (int64_t j = 0; j < m; ++j) {
    std::vector<Tensor> cols;  // the minor: rows 1.., every column but j
    for (int64_t c = 0; c < m; ++c) {
      if (c != j) cols.push_back(a.slice(r - 2, Expr(1), Expr(m)).slice(r - 1, Expr(c), Expr(c + 1)));
    }
    Tensor term = ops::mul(at(0, j), determinant(ops::concat(cols, r - 1), m - 1));
    sum = !sum ? term : (j % 2 == 0 ? ops::add(*sum, term) : ops::sub(*sum, term));
  }
  return *sum;
}

std::vector<Value> det(NodeContext& n) {
  Tensor x = n.in(0);
  if (x.rank() < 2) fail("onnx: ", n.where(), ": input ", to_string(x.shape()), " must be [..., M, M]");
  const Expr& m = x.shape().back();
  if (!m.is_const() || !(x.shape()[x.rank() - 2] == m)) fail("onnx: ", n.where(), ": input ", to_string(x.shape()), " is not square");
  if (m.value() < 1 || m.value() > 4) n.unsupported("Det of a " + std::to_string(m.value()) + "x" + std::to_string(m.value()) + " matrix (lumen expands cofactors up to 4x4)");
  return {same_type(n, determinant(x, m.value()))};
}

}  // namespace

void add_nn_ops(OpTable& t) {
  t["MatMul"] = matmul;
  t["Gemm"] = gemm;
  t["Einsum"] = einsum;
  t["Conv"] = conv;
  t["ConvTranspose"] = conv_transpose;
  t["MaxPool"] = pool<true>;
  t["AveragePool"] = pool<false>;
  t["LpPool"] = lp_pool;
  t["GlobalAveragePool"] = global_average_pool;
  t["GlobalMaxPool"] = global_max_pool;
  t["BatchNormalization"] = batch_norm;
  t["InstanceNormalization"] = instance_norm;
  t["LayerNormalization"] = layer_norm;
  t["RMSNormalization"] = rms_norm;
  t["GroupNormalization"] = group_norm;
  t["LpNormalization"] = lp_norm;
  t["MeanVarianceNormalization"] = mean_variance_norm;
  t["LRN"] = lrn;
  t["Det"] = det;
}

}  // namespace lumen::onnx
