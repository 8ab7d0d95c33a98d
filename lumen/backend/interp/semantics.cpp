#include "lumen/backend/interp/semantics.h"

#include <cmath>
#include <limits>

#include "lumen/core/error.h"

namespace lumen::interp {

int64_t wrap_i32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); }

double apply_unary(Op op, double x) {
  switch (op) {
    case Op::Log2: return std::log2(x);
    case Op::Exp2: return std::exp2(x);
    case Op::Sin: return std::sin(x);
    case Op::Sqrt: return std::sqrt(x);
    case Op::Recip: return 1.0 / x;
    default: fail("interp: ", op_name(op), " is not unary");
  }
}

double apply_binary(Op op, DType dtype, double a, double b) {
  if (is_float(dtype)) {
    switch (op) {
      case Op::Add: return a + b;
      case Op::Mul: return a * b;
      case Op::Mod: return std::fmod(a, b);
      case Op::LessThan: return a < b ? 1 : 0;
      default: break;
    }
  } else if (dtype == DType::Bool) {
    bool x = a != 0, y = b != 0;
    switch (op) {
      case Op::Add: return (x || y) ? 1 : 0;
      case Op::Mul: return (x && y) ? 1 : 0;
      case Op::LessThan: return (!x && y) ? 1 : 0;
      default: break;
    }
  } else {
    auto x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
    switch (op) {
      case Op::Add: return static_cast<double>(wrap_i32(x + y));
      case Op::Mul: return static_cast<double>(wrap_i32(x * y));
      case Op::Mod: return y == 0 ? 0 : static_cast<double>(x % y);
      case Op::LessThan: return x < y ? 1 : 0;
      default: break;
    }
  }
  fail("interp: ", op_name(op), " is not defined for ", dtype_name(dtype));
}

double reduce_identity(Op op, DType dtype) {
  if (op == Op::SumReduce) return 0.0;
  if (is_float(dtype)) return -std::numeric_limits<double>::infinity();
  if (dtype == DType::I32) return std::numeric_limits<int32_t>::min();
  return 0;
}

double reduce_step(Op op, DType dtype, double acc, double x) {
  if (op == Op::SumReduce) {
    if (dtype == DType::I32) return static_cast<double>(wrap_i32(static_cast<int64_t>(acc) + static_cast<int64_t>(x)));
    return acc + x;
  }
  if (std::isnan(acc) || std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
  return x > acc ? x : acc;
}

double store_as(DType dtype, double v) {
  switch (dtype) {
    case DType::F32:
    case DType::F16:
    case DType::BF16: return round_to_dtype(v, dtype);
    case DType::I32:
    case DType::I8:
    case DType::U8:
    case DType::Bool: return saturate_to(dtype, v);
  }
  return v;
}

}  // namespace lumen::interp
