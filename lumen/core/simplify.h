// The Expr simplifier: canonical sums (LinearForm), division/modulo
// normalisation using value bounds, and rewrite rules written as patterns
// (simplify_rules.cpp). Results are equal to the input at every variable
// binding inside the variables' bounds; the fuzz test checks exactly that.
#pragma once

#include "lumen/core/expr.h"

namespace lumen {

Expr simplify(const Expr& e);

// True only if `condition` is non-zero for every value of its variables
// within their bounds. False means "not proven", not "false".
bool prove(const Expr& condition);

}  // namespace lumen
