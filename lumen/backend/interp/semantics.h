// The scalar semantics of every primitive, shared by the interpreter and the
// per-element reference evaluator (docs/semantics.md lists them for users).
// Values travel as double; integers are exact in double and wrap to i32.
#pragma once

#include <cstdint>

#include "lumen/core/dtype.h"
#include "lumen/core/op.h"

namespace lumen::interp {

double apply_unary(Op op, double x);
// `dtype` is the operands' dtype (LessThan yields 0/1).
double apply_binary(Op op, DType dtype, double a, double b);
double reduce_identity(Op op, DType dtype);
double reduce_step(Op op, DType dtype, double acc, double x);
int64_t wrap_i32(int64_t v);
// `v` as stored in `dtype` (rounding, integer truncation and saturation, bool), like Array::set.
double store_as(DType dtype, double v);

}  // namespace lumen::interp
