// Resize (and Upsample's successor semantics): separable per axis. For each
// resized axis the importer computes, for every output position, the source
// taps (index, weight) of the chosen mode and coordinate transformation;
// the graph is then a weighted sum of Gathers along that axis with constant
// index and weight tensors. nearest: 1 tap, linear: 2, cubic: 4.
#include <algorithm>
#include <array>
#include <cmath>

#include "lumen/core/error.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

struct Taps {
  std::vector<std::vector<int64_t>> index;  // [tap][output position]
  std::vector<std::vector<double>> weight;
};

// The output length in these formulas is in_len * scale, unrounded (as the
// spec's reference: with scales given it differs from the integer length).
double source_coordinate(NodeContext& n, const std::string& mode, double out, int64_t in_len, int64_t out_len,
                         double scale) {
  double out_width = scale * static_cast<double>(in_len);
  if (mode == "half_pixel") return (out + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out_width != 1.0 ? (out + 0.5) / scale - 0.5 : -0.5;
  if (mode == "align_corners") return out_width == 1.0 ? 0.0 : out * static_cast<double>(in_len - 1) / (out_width - 1);
  if (mode == "asymmetric") return out / scale;
  if (mode == "half_pixel_symmetric") {
    double adjustment = static_cast<double>(out_len) / (scale * static_cast<double>(in_len));
    double center = static_cast<double>(in_len) / 2;
    return center * (1 - adjustment) + (out + 0.5) / scale - 0.5;
  }
  n.unsupported_attribute("coordinate_transformation_mode", "'" + mode + "' is not supported");
}

int64_t nearest(NodeContext& n, const std::string& rule, double x) {
  if (rule == "floor") return static_cast<int64_t>(std::floor(x));
  if (rule == "ceil") return static_cast<int64_t>(std::ceil(x));
  double f = std::floor(x);
  if (x - f == 0.5) return static_cast<int64_t>(rule == "round_prefer_ceil" ? f + 1 : f);
  if (rule != "round_prefer_floor" && rule != "round_prefer_ceil") {
    n.unsupported_attribute("nearest_mode", "'" + rule + "' is not supported");
  }
  return static_cast<int64_t>(std::round(x));
}

std::array<double, 4> cubic_weights(double t, double a) {
  auto w = [a](double d) {
    d = std::abs(d);
    if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
    if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
    return 0.0;
  };
  return {w(t + 1), w(t), w(1 - t), w(2 - t)};
}

Taps axis_taps(NodeContext& n, int64_t in_len, int64_t out_len, double scale, const std::string& mode) {
  std::string transform = n.attr_string("coordinate_transformation_mode", "half_pixel");
  std::string rule = n.attr_string("nearest_mode", "round_prefer_floor");
  double a = n.attr_float("cubic_coeff_a", -0.75);
  bool exclude_outside = n.attr_int("exclude_outside", 0) != 0;
  size_t count = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  Taps t{std::vector<std::vector<int64_t>>(count), std::vector<std::vector<double>>(count)};
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in_len - 1); };
  for (int64_t o = 0; o < out_len; ++o) {
    double x = source_coordinate(n, transform, static_cast<double>(o), in_len, out_len, scale);
    if (mode == "nearest") {
      t.index[0].push_back(clamp(nearest(n, rule, x)));
      t.weight[0].push_back(1.0);
      continue;
    }
    if (mode == "linear") x = std::clamp(x, 0.0, static_cast<double>(in_len - 1));
    int64_t base = static_cast<int64_t>(std::floor(x));
    double frac = x - static_cast<double>(base);
    if (mode == "linear") {
      t.index[0].push_back(clamp(base));
      t.index[1].push_back(clamp(base + 1));
      t.weight[0].push_back(1 - frac);
      t.weight[1].push_back(frac);
      continue;
    }
    std::array<double, 4> w = cubic_weights(frac, a);
    double total = 0;
    for (size_t k = 0; k < 4; ++k) {
      int64_t i = base - 1 + static_cast<int64_t>(k);
      if (exclude_outside && (i < 0 || i >= in_len)) w[k] = 0;
      total += w[k];
    }
    for (size_t k = 0; k < 4; ++k) {
      t.index[k].push_back(clamp(base - 1 + static_cast<int64_t>(k)));
      t.weight[k].push_back(exclude_outside && total != 0 ? w[k] / total : w[k]);
    }
  }
  return t;
}

Tensor resize_axis(NodeContext& n, const Tensor& x, int axis, int64_t out_len, double scale, const std::string& mode) {
  const Expr& in = x.shape()[static_cast<size_t>(axis)];
  if (!in.is_const()) n.unsupported("Resize of a dynamic dim");
  Taps taps = axis_taps(n, in.value(), out_len, scale, mode);
  Shape weight_shape(x.rank(), Expr(1));
  weight_shape[static_cast<size_t>(axis)] = Expr(out_len);
  Tensor f = is_float(x.dtype()) ? x : x.cast(DType::F32);
  std::optional<Tensor> sum;
  for (size_t k = 0; k < taps.index.size(); ++k) {
    std::vector<Expr> idx(taps.index[k].begin(), taps.index[k].end());
    Value iv = Value::of_ints(idx, {out_len}, kInt32);
    Tensor picked = f.gather(n.importer().tensor(iv, n.where() + " indices"), axis);
    if (mode == "nearest") return picked;
    Value wv = Value::of_reals(taps.weight[k], {out_len}, kFloat);
    Tensor w = n.importer().tensor(wv, n.where() + " weights").cast(f.dtype()).reshape(weight_shape);
    Tensor term = ops::mul(picked, w);
    sum = sum ? ops::add(*sum, term) : term;
  }
  return *sum;
}

std::vector<Value> resize(NodeContext& n) {
  Tensor x = n.in(0);
  std::string mode = n.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") n.unsupported_attribute("mode", "'" + mode + "'");
  if (n.attr_int("antialias", 0) != 0) n.unsupported_attribute("antialias", "is not supported");
  if (n.attr_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize") {
    n.unsupported_attribute("coordinate_transformation_mode", "tf_crop_and_resize is not supported");
  }
  n.attr_float("extrapolation_value", 0.0);
  std::string policy = n.attr_string("keep_aspect_ratio_policy", "stretch");
  std::vector<int> axes;
  for (int64_t a : n.attr_ints("axes")) axes.push_back(onnx_axis(n, a, x.rank(), "axes"));
  if (axes.empty()) {
    for (size_t d = 0; d < x.rank(); ++d) axes.push_back(static_cast<int>(d));
  }
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (n.has(2) && n.value(2).numel() > 0) scales = n.reals(2);
  if (n.has(3) && n.value(3).numel() > 0) sizes = n.ints(3);
  if (scales.empty() == sizes.empty()) fail("onnx: ", n.where(), ": give exactly one of scales and sizes");
  if ((scales.empty() ? sizes.size() : scales.size()) != axes.size()) {
    fail("onnx: ", n.where(), ": scales / sizes must have one entry per resized axis (", axes.size(), ")");
  }
  std::vector<int64_t> in_len;
  for (int a : axes) {
    const Expr& d = x.shape()[static_cast<size_t>(a)];
    if (!d.is_const()) n.unsupported("Resize of a dynamic dim");
    in_len.push_back(d.value());
  }
  if (!sizes.empty() && policy != "stretch") {
    double s = policy == "not_larger" ? 1e300 : 0;
    for (size_t k = 0; k < axes.size(); ++k) {
      double r = static_cast<double>(sizes[k]) / static_cast<double>(in_len[k]);
      s = policy == "not_larger" ? std::min(s, r) : std::max(s, r);
    }
    for (size_t k = 0; k < axes.size(); ++k) {
      scales.push_back(s);
      sizes[k] = static_cast<int64_t>(std::round(s * static_cast<double>(in_len[k])));
    }
  }
  Tensor y = x;
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t out = sizes.empty() ? static_cast<int64_t>(std::floor(static_cast<double>(in_len[k]) * scales[k])) : sizes[k];
    double scale = scales.empty() ? static_cast<double>(out) / static_cast<double>(in_len[k]) : scales[k];
    if (out == in_len[k] && scale == 1.0) continue;
    y = resize_axis(n, y, axes[k], out, scale, mode);
  }
  return {Value::of(y.dtype() == x.dtype() ? y : y.cast(x.dtype()), n.onnx_type(0))};
}

}  // namespace

void add_resize_ops(OpTable& t) { t["Resize"] = resize; }

}  // namespace lumen::onnx
