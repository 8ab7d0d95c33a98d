// The scalar semantics of every primitive, shared by the interpreter and the
// per-element reference evaluator (docs/semantics.md lists them for users).
// Values travel as Scalar: floats as double (rounded to their dtype when
// stored), integers as exact int64 that wrap to their dtype (i32 or i64).
#pragma once

#include <cstdint>

#include "lumen/core/dtype.h"
#include "lumen/core/op.h"
#include "lumen/core/scalar.h"

namespace lumen::interp {

Scalar apply_unary(Op op, const Scalar& x);
// `dtype` is the operands' dtype (LessThan yields 0/1).
Scalar apply_binary(Op op, DType dtype, const Scalar& a, const Scalar& b);
Scalar reduce_identity(Op op, DType dtype);
Scalar reduce_step(Op op, DType dtype, const Scalar& acc, const Scalar& x);
int64_t wrap_i32(int64_t v);
// `v` as stored in `dtype` (rounding, integer wrapping/saturation, bool), like Array::store.
Scalar store_as(DType dtype, const Scalar& v);

}  // namespace lumen::interp
