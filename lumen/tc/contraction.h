// Sums of products, contracted in steps: for `O(i,j) +=! A(i,k) * B(k,l) *
// C(l,j)` the naive loop nest visits i*j*k*l points; summing k over the
// factors that mention it first (T(i,l) = sum_k A(i,k) * B(k,l), then
// O(i,j) = sum_l T(i,l) * C(l,j)) visits i*k*l + i*l*j. The ranges are the
// whole statement's (inferred once), so the result is the same sum, added in
// another order (as einsum and the built-in ops do).
#pragma once

#include <optional>
#include <vector>

#include "lumen/core/tensor.h"
#include "lumen/tc/ast.h"
#include "lumen/tc/body.h"
#include "lumen/tc/scope.h"

namespace lumen::tc {

// The factors of a top-level product chain (`a * b * c` -> a, b, c).
std::vector<AstPtr> product_factors(const AstPtr& e);

// sum over `reduced` of two tensor reads multiplied, in the form the built-in
// matmul and conv take: the kept dims grouped [read by both, by the first
// only, by the second only] and each group flattened to one dim, the summed
// dims flattened to one last dim K, so the compiler sees [B, M, N] x K like a
// matmul (packed panels, register tiles); then back to `kept`'s order. The
// second read's group is the SIMD dim (its dims not flattened) unless only the
// first's is a multiple of the vector width (as conv2d's channels and
// positions forms). Empty when the factors are not two reads of one float
// dtype, or when one of them reads no kept dim of its own (a depthwise conv,
// a dot product): those keep the plain form.
std::optional<Tensor> two_read_contraction(const std::vector<AstPtr>& factors, const std::vector<IterDim>& kept,
                                           const std::vector<IterDim>& reduced, const Scope& scope);

// sum over `reduced` of the product of `factors`, as a tensor over `kept`.
Tensor contract(const std::vector<AstPtr>& factors, const std::vector<IterDim>& kept, const std::vector<IterDim>& reduced,
                const Scope& scope);

}  // namespace lumen::tc
