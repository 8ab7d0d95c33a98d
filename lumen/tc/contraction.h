// Sums of products, contracted in steps: for `O(i,j) +=! A(i,k) * B(k,l) *
// C(l,j)` the naive loop nest visits i*j*k*l points; summing k over the
// factors that mention it first (T(i,l) = sum_k A(i,k) * B(k,l), then
// O(i,j) = sum_l T(i,l) * C(l,j)) visits i*k*l + i*l*j. The ranges are the
// whole statement's (inferred once), so the result is the same sum, added in
// another order (as einsum and the built-in ops do).
#pragma once

#include <vector>

#include "lumen/core/tensor.h"
#include "lumen/tc/ast.h"
#include "lumen/tc/body.h"
#include "lumen/tc/scope.h"

namespace lumen::tc {

// The factors of a top-level product chain (`a * b * c` -> a, b, c).
std::vector<AstPtr> product_factors(const AstPtr& e);

// sum over `reduced` of the product of `factors`, as a tensor over `kept`.
Tensor contract(const std::vector<AstPtr>& factors, const std::vector<IterDim>& kept, const std::vector<IterDim>& reduced,
                const Scope& scope);

}  // namespace lumen::tc
