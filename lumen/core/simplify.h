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

// The largest positive constant known to divide `e` for every binding (1 if
// none): 16 for 16*blocks, 8 for 8*a + 16*b, the value itself for a constant
// (0 counts as divisible by anything: returns 0). Lets schedules split
// dynamic extents that are multiples of a lane count.
int64_t known_factor(const Expr& e);

}  // namespace lumen
