// Tensor comprehensions: layers written as index formulas, e.g.
//
//   auto matmul = lumen::tc::define(R"(
//     def matmul(float(M,K) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k) * B(k,n) })");
//   Tensor c = matmul({a, b})[0];
//
// Calling one records primitive nodes in the arguments' graph (views for the
// reads, the op library's compositions for the arithmetic, SumReduce /
// MaxReduce for the reductions), so the result is compiled, searched,
// verified and cached like any built-in op. Grammar and rules: docs/tc.md.
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "lumen/core/tensor.h"
#include "lumen/tc/ast.h"

namespace lumen::tc {

// An argument: a tensor, or a number for a scalar parameter.
using Arg = std::variant<Tensor, double>;

class Comprehension {
 public:
  Comprehension(std::string source, Def def);

  const std::string& name() const { return def_.name; }
  const Def& def() const { return def_; }
  const std::string& source() const { return *source_; }

  // The outputs, in the order of the `-> (...)` list. Argument shapes must be
  // static; sizes named alike must agree; dtypes must match the declarations.
  std::vector<Tensor> operator()(const std::vector<Arg>& args) const;
  // Tensors only (no scalar parameters).
  std::vector<Tensor> apply(const std::vector<Tensor>& args) const;

 private:
  std::shared_ptr<const std::string> source_;
  Def def_;
};

// Parses and checks `source`; `name` picks one def when it holds several.
Comprehension define(const std::string& source, const std::string& name = "");

}  // namespace lumen::tc
