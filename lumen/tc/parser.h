// Parses comprehension source into Defs (grammar: docs/tc.md). Syntax
// errors name what was expected and point at the token found instead.
#pragma once

#include <string_view>
#include <vector>

#include "lumen/tc/ast.h"

namespace lumen::tc {

// Every `def` in `source`, in order; at least one.
std::vector<Def> parse(std::string_view source);

// The element type a type name stands for ("float" -> F32); false if none.
bool type_from_name(const std::string& name, DType* dtype);

}  // namespace lumen::tc
