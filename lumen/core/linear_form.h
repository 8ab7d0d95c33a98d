// LinearForm — an Add/Mul tree seen as Σ coefficient·monomial + constant.
//
// This is the canonical form the simplifier gives sums: like terms combine,
// constant multiples distribute, `(x / c)·c + x % c` recombines to `x`, and
// terms are ordered deterministically (largest coefficient first) so equal
// sums become the same Expr.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "lumen/core/expr.h"

namespace lumen {

struct LinearForm {
  std::vector<std::pair<Expr, int64_t>> terms;  // distinct monomials, non-zero coefficients
  int64_t constant = 0;

  // Decomposes `e`; nothing when a coefficient would overflow.
  static std::optional<LinearForm> of(const Expr& e);

  // Adds `coefficient · term` (term is decomposed too). Throws Error on overflow.
  void add(const Expr& term, int64_t coefficient);
  void add(const LinearForm& other, int64_t scale);

  // gcd of all coefficients and the constant (0 for the empty form).
  int64_t gcd() const;
  // Every coefficient and the constant divided exactly by `divisor`.
  LinearForm divided_by(int64_t divisor) const;

  bool is_constant() const { return terms.empty(); }
  Expr to_expr() const;

 private:
  // Adds a monomial that is not a sum: combines it with its twin and
  // recombines (x / d)·d + x % d into x.
  void add_atom(const Expr& monomial, int64_t coefficient);
};

// The non-constant factors of a product, flattened and sorted: (b*a)*c → {a, b, c}.
std::vector<Expr> product_factors(const Expr& e);
// Rebuilds a product from sorted factors (left-associated).
Expr make_product(const std::vector<Expr>& factors);

}  // namespace lumen
