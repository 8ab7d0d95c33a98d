// Linear (de)quantization: DequantizeLinear, QuantizeLinear and
// DynamicQuantizeLinear, per tensor, per axis or blocked; integers of any
// width lumen holds (8-bit, and 2- / 4-bit held as i8 / u8) and float8 /
// float4 codes on the way in. Computed in f32, rounding half to even.
#include <cmath>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/io/onnx/narrow_types.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

// a / b in f32, correctly rounded (lumen's f32 division multiplies by a
// reciprocal; quantization rounds the quotient, so a last-bit error moves ties):
// the quotient in f64, rounded once to f32.
Tensor exact_div(const Tensor& a, const Tensor& b) {
  return ops::mul(a.cast(DType::F64), ops::reciprocal(b.cast(DType::F64))).cast(DType::F32);
}

// A scale / zero point made broadcastable to x: scalar (or one element) as
// is, 1-D along `axis`, blocked ones (same rank as x) repeated block_size
// times along it.
Tensor per_element(NodeContext& n, const Tensor& v, const Tensor& x, int64_t axis_attr, int64_t block_size) {
  if (v.rank() == 0) return v;
  if (v.rank() == 1 && v.shape()[0].is_const(1)) return v.reshape({});
  int axis = onnx_axis(n, axis_attr, x.rank());
  if (block_size <= 0) {
    if (v.rank() != 1) fail("onnx: ", n.where(), ": a per-axis scale / zero point must be 1-D, has ", to_string(v.shape()));
    Shape s(x.rank(), Expr(1));
    s[static_cast<size_t>(axis)] = v.shape()[0];
    return v.reshape(s);
  }
  if (v.rank() != x.rank()) fail("onnx: ", n.where(), ": a blocked scale must have x's rank, has ", to_string(v.shape()));
  Shape spread = v.shape();
  spread.insert(spread.begin() + axis + 1, Expr(block_size));
  Shape merged = v.shape();
  merged[static_cast<size_t>(axis)] = simplify(merged[static_cast<size_t>(axis)] * Expr(block_size));
  Tensor r = v.unsqueeze(axis + 1).expand(spread).reshape(merged);
  return r.slice(axis, Expr(0), x.shape()[static_cast<size_t>(axis)]);  // the last block may be partial
}

// The [lo, hi] range of an integer quantized type; false for other types.
bool integer_range(int type, double& lo, double& hi) {
  switch (type) {
    case kUint8: lo = 0; hi = 255; return true;
    case kInt8: lo = -128; hi = 127; return true;
    case kUint4: lo = 0; hi = 15; return true;
    case kInt4: lo = -8; hi = 7; return true;
    case kUint2: lo = 0; hi = 3; return true;
    case kInt2: lo = -2; hi = 1; return true;
    default: return false;
  }
}

std::vector<Value> dequantize_linear(NodeContext& n) {
  Tensor x = values_f32(n, 0);
  int64_t axis = n.attr_int("axis", 1);
  int64_t block_size = n.attr_int("block_size", 0);
  int out_type = static_cast<int>(n.attr_int("output_dtype", n.onnx_type(1)));
  DType out = data_dtype(out_type, n.where() + " output");
  if (n.has(2) && !is_code_type(n.onnx_type(0))) {  // float8 / float4 zero points are 0 by definition
    x = ops::sub(x, per_element(n, values_f32(n, 2), x, axis, block_size));
  }
  Tensor y = ops::mul(x, per_element(n, n.in(1).cast(DType::F32), x, axis, block_size));
  return {Value::of(y.cast(out), out_type)};
}

std::vector<Value> quantize_linear(NodeContext& n) {
  Tensor x = n.in(0).cast(DType::F32);
  int64_t axis = n.attr_int("axis", 1);
  int64_t block_size = n.attr_int("block_size", 0);
  n.attr_int("saturate", 1);  // only float8 targets read it, and lumen does not encode those
  if (n.has_attr("precision") && n.attr_int("precision", kFloat) != kFloat) n.unsupported_attribute("precision", "must be float");
  int type = n.has(2) ? n.onnx_type(2) : static_cast<int>(n.attr_int("output_dtype", kUint8));
  double lo = 0, hi = 0;
  if (!integer_range(type, lo, hi)) n.unsupported(std::string("QuantizeLinear to ") + onnx_type_name(type));
  Tensor q = ops::round(exact_div(x, per_element(n, n.in(1).cast(DType::F32), x, axis, block_size)));
  if (n.has(2)) q = ops::add(q, per_element(n, n.in(2).cast(DType::F32), x, axis, block_size));
  return {Value::of(ops::clamp(q, lo, hi).cast(data_dtype(type, n.where() + " output")), type)};
}

// x -> uint8 with a scale and zero point covering [min(x, 0), max(x, 0)].
std::vector<Value> dynamic_quantize_linear(NodeContext& n) {
  Tensor x = n.in(0).cast(DType::F32);
  std::vector<int> all;
  for (size_t d = 0; d < x.rank(); ++d) all.push_back(static_cast<int>(d));
  Tensor hi = ops::maximum(ops::amax(x, all), x.scalar(0)), lo = ops::minimum(ops::amin(x, all), x.scalar(0));
  Tensor range = ops::sub(hi, lo);
  Tensor scale = exact_div(ops::where(ops::eq(range, range.scalar(0)), ops::ones_like(range), range), range.scalar(255));
  Tensor zero = ops::round(ops::clamp(ops::neg(exact_div(lo, scale)), 0.0, 255.0));
  Tensor y = ops::clamp(ops::add(ops::round(exact_div(x, scale)), zero), 0.0, 255.0);
  return {Value::of(y.cast(DType::U8), kUint8), Value::of(scale.cast(n.in(0).dtype()), n.onnx_type(0)),
          Value::of(zero.cast(DType::U8), kUint8)};
}

}  // namespace

void add_quantize_ops(OpTable& t) {
  t["DequantizeLinear"] = dequantize_linear;
  t["QuantizeLinear"] = quantize_linear;
  t["DynamicQuantizeLinear"] = dynamic_quantize_linear;
}

}  // namespace lumen::onnx
