// Ops whose result is a shape or is made from one: Shape, Size,
// ConstantOfShape, Range, EyeLike, Trilu. Shapes are known at import (their
// dynamic dims as symbols), so Shape and Size never touch run-time data.
#include <algorithm>
#include <cmath>

#include "lumen/core/error.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"
#include "onnx/onnx.pb.h"

namespace lumen::onnx {

namespace {

Shape value_shape(NodeContext& n, size_t i) {
  Value& v = n.value(i);
  return v.tensor.defined() ? v.tensor.shape() : v.shape;
}

std::vector<Value> shape(NodeContext& n) {
  Shape s = value_shape(n, 0);
  int64_t rank = static_cast<int64_t>(s.size());
  int64_t start = n.attr_int("start", 0), end = n.attr_int("end", rank);
  auto clamp_axis = [&](int64_t a) { return std::clamp(a < 0 ? a + rank : a, int64_t{0}, rank); };
  start = clamp_axis(start);
  end = clamp_axis(end);
  std::vector<Expr> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(s[static_cast<size_t>(d)]);
  return {Value::of_ints(dims, {static_cast<int64_t>(dims.size())})};
}

std::vector<Value> size(NodeContext& n) {
  Expr total(1);
  for (const Expr& d : value_shape(n, 0)) total = total * d;
  return {Value::of_ints({total}, {})};
}

Shape to_shape(const std::vector<Expr>& dims) { return Shape(dims.begin(), dims.end()); }

std::vector<Value> constant_of_shape(NodeContext& n) {
  std::vector<Expr> dims = n.has(0) ? n.exprs(0) : std::vector<Expr>{};
  double fill = 0;
  int64_t int_fill = 0;  // integers exactly (an int64 past 2^53 has no double)
  int type = kFloat;
  if (n.has_attr("value")) {
    HostTensor h = decode_tensor(n.attr_tensor("value"), n.importer().folder());
    if (h.numel() != 1) n.unsupported_attribute("value", "must hold one element");
    fill = h.real(0);
    int_fill = onnx_type_is_float(h.onnx_type) ? 0 : h.integer(0);
    type = h.onnx_type;
  }
  bool concrete = true;
  int64_t count = 1;
  for (const Expr& d : dims) {
    concrete = concrete && d.is_const();
    if (d.is_const() && (d.value() < 0 || __builtin_mul_overflow(count, d.value(), &count))) {
      fail("onnx: ", n.where(), ": invalid shape ", to_string(dims));
    }
  }
  if (concrete && count <= 64) {  // small: known at import (often used as a shape itself)
    std::vector<int64_t> sizes;
    for (const Expr& d : dims) sizes.push_back(d.value());
    if (onnx_type_is_float(type)) return {Value::of_reals(std::vector<double>(static_cast<size_t>(count), fill), sizes, type)};
    return {Value::of_ints(std::vector<Expr>(static_cast<size_t>(count), Expr(int_fill)), sizes, type)};
  }
  DType dtype = data_dtype(type, n.where() + " value");
  Tensor value = onnx_type_is_float(type) ? n.graph().constant(fill, dtype) : n.graph().constant_int(int_fill, dtype);
  return {Value::of(value.expand(to_shape(dims)), type)};
}

std::vector<Value> range(NodeContext& n) {
  int type = n.onnx_type(0);
  if (n.known(0) && n.known(1) && n.known(2) && !onnx_type_is_float(type)) {
    std::vector<int64_t> start = n.ints(0), limit = n.ints(1), delta = n.ints(2);
    if (delta.at(0) == 0) fail("onnx: ", n.where(), ": delta is 0");
    int64_t count = std::max<int64_t>(0, (limit.at(0) - start.at(0) + delta[0] + (delta[0] > 0 ? -1 : 1)) / delta[0]);
    if (count <= kKnownLimit) {
      std::vector<Expr> values;
      for (int64_t k = 0; k < count; ++k) values.push_back(Expr(start[0] + k * delta[0]));
      return {Value::of_ints(values, {count}, type)};
    }
  }
  std::vector<double> start = n.reals(0), limit = n.reals(1), delta = n.reals(2);
  if (delta.at(0) == 0) fail("onnx: ", n.where(), ": delta is 0");
  DType dtype = data_dtype(type, n.where() + " output");
  int64_t count = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit.at(0) - start.at(0)) / delta[0])));
  Tensor i = n.graph().iota(loop_index(Shape{Expr(count)}, 0), Shape{Expr(count)}, DType::I32);
  Tensor out = is_float(dtype) ? i.cast(dtype) * delta[0] + start[0] : (i * static_cast<double>(delta[0]) + start[0]);
  return {Value::of(out.dtype() == dtype ? out : out.cast(dtype), type)};
}

std::vector<Value> eye_like(NodeContext& n) {
  Tensor x = n.in(0);
  if (x.rank() != 2) n.unsupported("EyeLike of a rank-" + std::to_string(x.rank()) + " input");
  int type = static_cast<int>(n.attr_int("dtype", n.onnx_type(0)));
  int64_t k = n.attr_int("k", 0);
  Shape s = x.shape();
  Expr cond = eq(loop_index(s, 1) - loop_index(s, 0), Expr(k));
  return {Value::of(n.graph().iota(cond, s, data_dtype(type, n.where() + " output")), type)};
}

std::vector<Value> trilu(NodeContext& n) {
  bool upper = n.attr_int("upper", 1) != 0;
  int64_t k = n.has(1) ? n.ints(1).at(0) : 0;
  Tensor x = n.in(0);
  return {Value::of(upper ? ops::triu(x, k) : ops::tril(x, k), n.onnx_type(0))};
}

// indices (negative ones count from depth) -> values[1] at the index along `axis`, values[0] elsewhere.
std::vector<Value> one_hot(NodeContext& n) {
  Tensor indices = n.in(0);
  std::vector<double> depth = n.reals(1);
  if (depth.size() != 1 || depth[0] < 1) fail("onnx: ", n.where(), ": depth must be one positive value");
  int64_t d = static_cast<int64_t>(depth[0]);
  Tensor values = n.in(2);
  Tensor idx = is_float(indices.dtype()) ? ops::trunc(indices).cast(DType::I32) : indices.cast(DType::I32);
  idx = ops::where(ops::lt(idx, idx.scalar(0)), ops::add(idx, idx.scalar(static_cast<double>(d))), idx);
  int axis = onnx_axis(n, n.attr_int("axis", -1), indices.rank() + 1);
  Shape s = idx.shape();
  s.insert(s.begin() + axis, Expr(d));
  Tensor position = n.graph().iota(loop_index(s, static_cast<size_t>(axis)), s, DType::I32);
  Tensor hot = ops::eq(position, idx.unsqueeze(axis));
  Tensor on = values.slice(0, Expr(1), Expr(2)).reshape({}), off = values.slice(0, Expr(0), Expr(1)).reshape({});
  return {Value::of(ops::where(hot, on.expand(s), off.expand(s)), n.onnx_type(2))};
}

// Hann / Hamming / Blackman windows: sum_k a_k cos(2 pi k n / N), N = size (periodic) or size - 1; known at import.
template <int Kind>
std::vector<Value> window(NodeContext& n) {
  std::vector<int64_t> size = n.ints(0);
  if (size.size() != 1 || size[0] < 0 || size[0] > kKnownLimit) fail("onnx: ", n.where(), ": size must be one value in [0, ", kKnownLimit, "]");
  bool periodic = n.attr_int("periodic", 1) != 0;
  int type = static_cast<int>(n.attr_int("output_datatype", kFloat));
  data_dtype(type, n.where() + " output");
  double denominator = static_cast<double>(periodic ? size[0] : size[0] - 1);
  std::vector<double> values;
  for (int64_t i = 0; i < size[0]; ++i) {
    double t = denominator > 0 ? 2 * M_PI * static_cast<double>(i) / denominator : 0;
    if (Kind == 0) values.push_back(0.5 - 0.5 * std::cos(t));
    if (Kind == 1) values.push_back(25.0 / 46 - 21.0 / 46 * std::cos(t));
    if (Kind == 2) values.push_back(0.42 - 0.5 * std::cos(t) + 0.08 * std::cos(2 * t));
  }
  return {Value::of_reals(values, {size[0]}, type)};
}

}  // namespace

void add_shape_ops(OpTable& t) {
  t["Shape"] = shape;
  t["Size"] = size;
  t["ConstantOfShape"] = constant_of_shape;
  t["Range"] = range;
  t["EyeLike"] = eye_like;
  t["Trilu"] = trilu;
  t["OneHot"] = one_hot;
  t["HannWindow"] = window<0>;
  t["HammingWindow"] = window<1>;
  t["BlackmanWindow"] = window<2>;
}

}  // namespace lumen::onnx
