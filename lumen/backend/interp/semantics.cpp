#include "lumen/backend/interp/semantics.h"

#include <cmath>
#include <limits>

#include "lumen/core/error.h"

namespace lumen::interp {

namespace {

// Two's complement wrapping arithmetic on int64 (no signed overflow).
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// An integer result wrapped to the dtype it is computed in.
Scalar wrapped(DType dtype, int64_t v) { return Scalar::of_int(dtype == DType::I64 ? v : wrap_i32(v)); }

Scalar integer_binary(Op op, DType dtype, int64_t x, int64_t y) {
  switch (op) {
    case Op::Add: return wrapped(dtype, wrap_add(x, y));
    case Op::Mul: return wrapped(dtype, wrap_mul(x, y));
    case Op::Mod: return Scalar::of_int(y == 0 || y == -1 ? 0 : x % y);  // x mod 0 is 0; never a trap
    case Op::LessThan: return Scalar::of_int(x < y ? 1 : 0);
    default: fail("interp: ", op_name(op), " is not defined for ", dtype_name(dtype));
  }
}

}  // namespace

int64_t wrap_i32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); }

Scalar apply_unary(Op op, const Scalar& s) {
  double x = s.to_double();
  switch (op) {
    case Op::Log2: return Scalar::of_float(std::log2(x));
    case Op::Exp2: return Scalar::of_float(std::exp2(x));
    case Op::Sin: return Scalar::of_float(std::sin(x));
    case Op::Sqrt: return Scalar::of_float(std::sqrt(x));
    case Op::Recip: return Scalar::of_float(1.0 / x);
    default: fail("interp: ", op_name(op), " is not unary");
  }
}

Scalar apply_binary(Op op, DType dtype, const Scalar& sa, const Scalar& sb) {
  if (is_float(dtype)) {
    double a = sa.to_double(), b = sb.to_double();
    switch (op) {
      case Op::Add: return Scalar::of_float(a + b);
      case Op::Mul: return Scalar::of_float(a * b);
      case Op::Mod: return Scalar::of_float(std::fmod(a, b));
      case Op::LessThan: return Scalar::of_int(a < b ? 1 : 0);
      default: break;
    }
  } else if (dtype == DType::Bool) {
    bool x = sa.to_int() != 0, y = sb.to_int() != 0;
    switch (op) {
      case Op::Add: return Scalar::of_int((x || y) ? 1 : 0);
      case Op::Mul: return Scalar::of_int((x && y) ? 1 : 0);
      case Op::LessThan: return Scalar::of_int((!x && y) ? 1 : 0);
      default: break;
    }
  } else {
    return integer_binary(op, dtype, sa.to_int(), sb.to_int());
  }
  fail("interp: ", op_name(op), " is not defined for ", dtype_name(dtype));
}

Scalar reduce_identity(Op op, DType dtype) {
  if (op == Op::SumReduce) return is_float(dtype) ? Scalar::of_float(0.0) : Scalar::of_int(0);
  if (is_float(dtype)) return Scalar::of_float(-std::numeric_limits<double>::infinity());
  if (dtype == DType::I32) return Scalar::of_int(std::numeric_limits<int32_t>::min());
  if (dtype == DType::I64) return Scalar::of_int(std::numeric_limits<int64_t>::min());
  return Scalar::of_int(0);
}

Scalar reduce_step(Op op, DType dtype, const Scalar& acc, const Scalar& x) {
  if (!is_float(dtype)) {
    int64_t a = acc.to_int(), v = x.to_int();
    if (op == Op::SumReduce) return wrapped(dtype, wrap_add(a, v));
    return Scalar::of_int(v > a ? v : a);
  }
  double a = acc.to_double(), v = x.to_double();
  if (op == Op::SumReduce) return Scalar::of_float(a + v);
  if (std::isnan(a) || std::isnan(v)) return Scalar::of_float(std::numeric_limits<double>::quiet_NaN());
  return Scalar::of_float(v > a ? v : a);
}

Scalar store_as(DType dtype, const Scalar& v) { return convert_to(dtype, v); }

}  // namespace lumen::interp
