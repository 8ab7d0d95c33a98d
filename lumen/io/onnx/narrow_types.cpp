#include "lumen/io/onnx/narrow_types.h"

#include <cmath>
#include <limits>
#include <set>

#include "lumen/core/error.h"
#include "lumen/io/onnx/node_context.h"

namespace lumen::onnx {

namespace {

// A minifloat with `exp_bits` / `man_bits` and `bias`: subnormals at exponent 0.
double minifloat(uint32_t exponent, uint32_t mantissa, int man_bits, int bias) {
  double m = static_cast<double>(mantissa) / static_cast<double>(1u << man_bits);
  if (exponent == 0) return std::ldexp(m, 1 - bias);
  return std::ldexp(1.0 + m, static_cast<int>(exponent) - bias);
}

}  // namespace

bool is_code_type(int t) {
  return t == kFloat8E4M3FN || t == kFloat8E4M3FNUZ || t == kFloat8E5M2 || t == kFloat8E5M2FNUZ || t == kFloat8E8M0 ||
         t == kFloat4E2M1;
}

bool is_small_int_type(int t) { return t == kUint4 || t == kInt4 || t == kUint2 || t == kInt2; }

int narrow_type_bits(int t) {
  if (t == kUint4 || t == kInt4 || t == kFloat4E2M1) return 4;
  if (t == kUint2 || t == kInt2) return 2;
  return 8;
}

int32_t unpack_narrow(int t, uint32_t code) {
  int bits = narrow_type_bits(t);
  code &= (1u << bits) - 1;
  if ((t == kInt4 || t == kInt2) && (code >> (bits - 1)) != 0) return static_cast<int32_t>(code) - (1 << bits);
  return static_cast<int32_t>(code);
}

double decode_code(int t, uint32_t c) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  double sign = (c & (t == kFloat4E2M1 ? 0x8u : 0x80u)) ? -1.0 : 1.0;
  switch (t) {
    case kFloat8E4M3FN:
      if ((c & 0x7f) == 0x7f) return nan;
      return sign * minifloat((c >> 3) & 15, c & 7, 3, 7);
    case kFloat8E4M3FNUZ:
      if (c == 0x80) return nan;
      return sign * minifloat((c >> 3) & 15, c & 7, 3, 8);
    case kFloat8E5M2:
      if (((c >> 2) & 31) == 31) return (c & 3) == 0 ? sign * inf : nan;
      return sign * minifloat((c >> 2) & 31, c & 3, 2, 15);
    case kFloat8E5M2FNUZ:
      if (c == 0x80) return nan;
      return sign * minifloat((c >> 2) & 31, c & 3, 2, 16);
    case kFloat8E8M0:
      return c == 0xff ? nan : std::ldexp(1.0, static_cast<int>(c) - 127);
    case kFloat4E2M1:
      return sign * minifloat((c >> 1) & 3, c & 1, 1, 1);
    default:
      fail("onnx: element type ", t, " has no bit codes (internal)");
  }
}

std::vector<double> code_table(int t) {
  std::vector<double> table;
  for (uint32_t c = 0; c < (1u << narrow_type_bits(t)); ++c) table.push_back(decode_code(t, c));
  return table;
}

bool narrow_type_op_allowed(const std::string& op) {
  static const std::set<std::string> allowed{"Cast", "CastLike", "Identity", "Reshape", "Transpose", "Squeeze",
                                             "Unsqueeze", "Flatten", "Concat", "Split", "Slice", "Gather",
                                             "Expand", "Tile", "Shape", "Size", "If", "Loop", "DequantizeLinear",
                                             "QuantizeLinear"};
  return allowed.count(op) > 0;
}

Tensor values_f32(NodeContext& n, size_t i) {
  int type = n.onnx_type(i);
  Tensor x = n.in(i);
  if (!is_code_type(type)) return x.dtype() == DType::F32 ? x : x.cast(DType::F32);
  std::vector<double> table = code_table(type);
  Value t = Value::of_reals(table, {static_cast<int64_t>(table.size())}, kFloat);
  t.name = std::string("onnx_") + onnx_type_name(type) + "_table";
  return n.importer().tensor(t, n.where() + " decoding table").gather(x.cast(DType::I32), 0);
}

}  // namespace lumen::onnx
