#include "lumen/core/scalar.h"

namespace lumen {

namespace {

int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

}  // namespace

Scalar convert_to(DType dtype, const Scalar& v) {
  if (is_float(dtype)) return Scalar::of_float(round_to_dtype(v.to_double(), dtype));
  if (dtype == DType::Bool) return Scalar::of_int(v.integral ? v.i != 0 : v.f != 0.0);
  int64_t t = v.to_int();  // floats truncate and saturate to int64 first
  switch (dtype) {
    case DType::I64: return Scalar::of_int(t);
    case DType::I32:
      if (!v.integral) return Scalar::of_int(clamp(t, INT32_MIN, INT32_MAX));
      return Scalar::of_int(static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(t))));
    case DType::I8: return Scalar::of_int(clamp(t, -128, 127));
    case DType::U8: return Scalar::of_int(clamp(t, 0, 255));
    default: return Scalar::of_int(t);
  }
}

}  // namespace lumen
