// DFT as matrix products: the transform's cos / sin matrices for the known
// length are computed at import (in double) and applied to the real and
// imaginary parts along the signal axis, in f64 (a sum of L products whose
// terms cancel: f32 loses the small outputs the reference's FFT keeps). Forward, inverse, one-sided
// (rfft: the first L/2 + 1 frequencies) and inverse one-sided (irfft: a real
// signal from Hermitian-symmetric frequencies).
#include <cmath>

#include "lumen/core/error.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

constexpr int64_t kMaxLength = 4096;

// y = re @ a + im @ b with [in, out] matrices (`im` absent: a real signal).
struct Transform {
  std::vector<double> re_to_re, im_to_re, re_to_im, im_to_im;  // row-major [in, out]
  int64_t in = 0, out = 0;
  bool complex_out = true;
};

Transform transform(int64_t length, bool inverse, bool onesided) {
  Transform t;
  t.in = inverse && onesided ? length / 2 + 1 : length;
  t.out = !inverse && onesided ? length / 2 + 1 : length;
  t.complex_out = !(inverse && onesided);
  double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0, sign = inverse ? 1.0 : -1.0;
  for (int64_t i = 0; i < t.in; ++i) {
    for (int64_t o = 0; o < t.out; ++o) {
      int64_t k = inverse ? i : o, n = inverse ? o : i;  // frequency and sample
      double theta = 2 * M_PI * static_cast<double>((k * n) % length) / static_cast<double>(length);
      double c = std::cos(theta) * scale, s = sign * std::sin(theta) * scale;
      // irfft: the frequencies past L/2 are the conjugates of those below (counted twice).
      double weight = inverse && onesided && k != 0 && 2 * k != length ? 2.0 : 1.0;
      t.re_to_re.push_back(weight * c);
      t.im_to_re.push_back(-weight * s);
      t.re_to_im.push_back(s);
      t.im_to_im.push_back(c);
    }
  }
  return t;
}

Tensor matrix(NodeContext& n, const std::vector<double>& values, int64_t in, int64_t out, DType dtype) {
  Value v = Value::of_reals(values, {in, out}, kFloat);
  return n.importer().tensor(v, n.where() + " DFT matrix").cast(dtype);
}

// x [..., N, ...] with the signal axis last -> padded with zeros or cut to `len`.
Tensor fit_length(const Tensor& x, int64_t have, int64_t len) {
  int last = static_cast<int>(x.rank()) - 1;
  if (have > len) return x.slice(last, Expr(0), Expr(len));
  if (have == len) return x;
  std::vector<int64_t> pads(2 * x.rank(), 0);
  pads[1] = len - have;
  return ops::pad(x, pads, "constant", 0);
}

std::vector<Value> dft(NodeContext& n) {
  Tensor x = n.in(0);
  bool inverse = n.attr_int("inverse", 0) != 0, onesided = n.attr_int("onesided", 0) != 0;
  int64_t axis_value = n.opset() >= 20 ? (n.has(2) ? n.ints(2).at(0) : -2) : n.attr_int("axis", 1);
  if (x.rank() < 2 || !x.shape().back().is_const() || (x.shape().back().value() != 1 && x.shape().back().value() != 2)) {
    fail("onnx: ", n.where(), ": input ", to_string(x.shape()), " must end in a dim of 1 (real) or 2 (complex)");
  }
  int axis = onnx_axis(n, axis_value, x.rank(), "axis");
  if (axis == static_cast<int>(x.rank()) - 1) fail("onnx: ", n.where(), ": axis is the complex dim");
  const Expr& dim = x.shape()[static_cast<size_t>(axis)];
  if (!dim.is_const()) n.unsupported("DFT over a dynamic length");
  int64_t length = n.has(1) ? n.ints(1).at(0) : (inverse && onesided ? 2 * (dim.value() - 1) : dim.value());
  if (length < 1 || length > kMaxLength) n.unsupported("a DFT length of " + std::to_string(length) + " (lumen builds the matrix: 1 to 4096)");
  Transform t = transform(length, inverse, onesided);
  int last = static_cast<int>(x.rank()) - 1;
  std::vector<int> order;  // the signal axis moved last, the complex dim dropped
  for (int d = 0; d < last; ++d) {
    if (d != axis) order.push_back(d);
  }
  order.push_back(axis);
  DType dtype = DType::F64;
  auto part = [&](int64_t k) { return fit_length(x.slice(last, Expr(k), Expr(k + 1)).squeeze(last).permute(order).cast(dtype), dim.value(), t.in); };
  Tensor re = part(0);
  std::optional<Tensor> im;
  if (x.shape().back().value() == 2) im = part(1);
  auto apply = [&](const std::vector<double>& from_re, const std::vector<double>& from_im) {
    Tensor y = ops::matmul(re, matrix(n, from_re, t.in, t.out, dtype));
    return im ? ops::add(y, ops::matmul(*im, matrix(n, from_im, t.in, t.out, dtype))) : y;
  };
  std::vector<Tensor> parts{apply(t.re_to_re, t.im_to_re)};
  if (t.complex_out) parts.push_back(apply(t.re_to_im, t.im_to_im));
  Tensor y = ops::stack(parts, static_cast<int>(parts[0].rank()));
  std::vector<int> back(static_cast<size_t>(last) + 1);  // undo `order`, the complex dim last
  for (size_t k = 0; k < order.size(); ++k) back[static_cast<size_t>(order[k])] = static_cast<int>(k);
  back[static_cast<size_t>(last)] = last;
  return {Value::of(y.permute(back).cast(x.dtype()), n.onnx_type(0))};
}

}  // namespace

void add_spectral_ops(OpTable& t) { t["DFT"] = dft; }

}  // namespace lumen::onnx
