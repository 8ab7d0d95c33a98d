// Scalar — one element value as the reference semantics carry it: integer
// and bool dtypes as an exact int64, float dtypes as a double. An int64
// past 2^53 has no exact double, so integers never travel through double.
#pragma once

#include <cstdint>

#include "lumen/core/dtype.h"

namespace lumen {

struct Scalar {
  bool integral = false;  // `i` holds the value; otherwise `f` does
  int64_t i = 0;
  double f = 0.0;

  static Scalar of_int(int64_t v) { return Scalar{true, v, 0.0}; }
  static Scalar of_float(double v) { return Scalar{false, 0, v}; }
  // The value as a double (rounded for integers beyond 2^53).
  double to_double() const { return integral ? static_cast<double>(i) : f; }
  // The value as an int64: floats truncate toward zero and saturate; NaN is 0.
  int64_t to_int() const { return integral ? i : saturate_to_i64(f); }
  bool is_nan() const { return !integral && f != f; }
};

// `v` converted to `dtype` as a store into that dtype does: floats round to
// the dtype; an integer into I32 wraps (as a C or PyTorch narrowing cast);
// a float into any integer dtype, and anything into I8/U8, truncates and
// saturates; bool is v != 0. The result is integral exactly when the dtype
// is not a float.
Scalar convert_to(DType dtype, const Scalar& v);

}  // namespace lumen
