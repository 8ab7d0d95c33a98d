// One statement, `C(i, j) op rhs where ...`, lowered into the graph: its
// index variables and the reads that bound them are collected, their ranges
// inferred, the body lowered over the iteration space (left-hand side's
// indices first, reduced ones last) and reduced with SumReduce / MaxReduce
// compositions (min = -max(-x); products by a pairwise tree of multiplies,
// exact for the static extents comprehensions have).
#pragma once

#include "lumen/core/tensor.h"
#include "lumen/tc/ast.h"
#include "lumen/tc/scope.h"

namespace lumen::tc {

// The tensor `s` defines, given the tensors so far in `scope` (its previous
// value, for the accumulating forms, included).
Tensor lower_statement(const Statement& s, const Scope& scope);

}  // namespace lumen::tc
