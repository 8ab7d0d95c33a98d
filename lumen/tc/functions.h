// The elementwise functions a comprehension may call, each lowered to the op
// library (lumen/ops), so a comprehension computes them exactly as the
// built-in ops do.
#pragma once

#include <string>
#include <vector>

#include "lumen/core/tensor.h"

namespace lumen::tc {

bool is_function(const std::string& name);
// Number of arguments `name` takes (is_function(name) must hold).
size_t function_arity(const std::string& name);
// Whether `name` needs float arguments (exp, log, ...); abs, max, min,
// select and the casts take any numeric type.
bool function_needs_float(const std::string& name);
// The cast target of float(x), int(x), ... ; false if `name` is no cast.
bool function_cast(const std::string& name, DType* dtype);
// Applies `name` to arguments of equal dtype (select: bool, then two equal).
Tensor apply_function(const std::string& name, const std::vector<Tensor>& args);
// "exp, log, ..." for messages.
std::string function_list();

}  // namespace lumen::tc
