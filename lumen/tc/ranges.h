// Range inference: each index variable of a statement gets the largest
// rectangular range that keeps every tensor read in bounds (docs/tc.md,
// "Range inference"). `where v in lo:hi` sets a range outright; `where v < e`
// (<=, >, >=) narrows the inferred one.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lumen/tc/ast.h"
#include "lumen/tc/index_form.h"
#include "lumen/tc/scope.h"

namespace lumen::tc {

// One index expression reading dim `dim` (of `size`) of `tensor`: every
// value it takes must lie in [0, size).
struct Constraint {
  const Ast* index = nullptr;  // null for a left-hand side index (its form is the bare variable)
  Pos pos;
  std::string tensor;
  size_t dim = 0;
  int64_t size = 0;
  std::optional<Affine> form;  // nullopt: not affine; checked, never solved for
};

// Ranges for `vars` (every index variable of `statement`, first use first),
// then a check that every constraint holds over them. Errors name the
// variable and point at the source.
std::map<std::string, Range> infer_ranges(const Statement& statement, const std::vector<IndexVar>& vars,
                                          const std::vector<Constraint>& constraints, const Scope& scope);

}  // namespace lumen::tc
