// Index expressions as the range inference and the lowering see them: an
// affine form sum(coeff * var) + constant where possible (a read through a
// strided view), else a conservative interval of the values it takes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "lumen/tc/ast.h"
#include "lumen/tc/scope.h"

namespace lumen::tc {

struct Affine {
  std::map<std::string, int64_t> coeff;  // index variable -> coefficient (never 0)
  int64_t constant = 0;
};

// The affine form of an index expression over index variables, sizes, int
// scalars and integer numbers; nullopt when it is not affine (a product of
// index variables, / or % of one, a tensor read, a call). Errors (with a
// caret) for float numbers, float scalars and tensors named without indices.
std::optional<Affine> affine_form(const Ast& e, const Scope& scope);

// The value of an expression of sizes, int scalars and integers (where bounds).
int64_t constant_value(const Ast& e, const Scope& scope, const char* what);

// Inclusive bounds.
struct Interval {
  int64_t lo = 0;
  int64_t hi = 0;
};

// Values an affine form takes over the ranges (every variable must have one).
Interval interval_of(const Affine& form, const std::map<std::string, Range>& ranges);
// Conservative bounds of any integer index expression; nullopt when they
// depend on data (a tensor read inside the index).
std::optional<Interval> interval_of(const Ast& e, const Scope& scope, const std::map<std::string, Range>& ranges);

// Overflow-checked int64 arithmetic for index math: an Error naming `what`.
int64_t checked_add(int64_t a, int64_t b, const char* what);
int64_t checked_mul(int64_t a, int64_t b, const char* what);
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);

}  // namespace lumen::tc
