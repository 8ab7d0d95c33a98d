// Evaluating Exprs at concrete variable values: a tree walker for one-off
// use, and ExprProgram, a flattened form for evaluating the same expression
// at many points (the interpreter's index math).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "lumen/core/expr.h"

namespace lumen {

using Bindings = std::unordered_map<std::string, int64_t>;

// Evaluates `e`; every variable must be bound by name. Overflow, division by
// zero and unbound variables raise lumen::Error.
int64_t evaluate(const Expr& e, const Bindings& bindings);

// `e` with every bound variable replaced by its value and constants folded.
Expr substitute(const Expr& e, const Bindings& bindings);

// Replaces variables (matched by node) with expressions.
Expr substitute(const Expr& e, const std::unordered_map<Expr, Expr, ExprHash>& replacements);

class ExprProgram {
 public:
  ExprProgram() = default;
  // `slots` names the variables in the order run() receives their values;
  // variables not in `slots` must be bound in `fixed`.
  ExprProgram(const Expr& e, const std::vector<std::string>& slots, const Bindings& fixed = {});

  int64_t run(const int64_t* slot_values) const;

 private:
  struct Instr {
    ExprKind kind;
    int32_t a, b, c;  // register numbers of operands
    int64_t value;    // Const value or slot number for Var
  };
  std::vector<Instr> code_;
  mutable std::vector<int64_t> registers_;
};

}  // namespace lumen
