// Lowers a statement's right-hand side to primitives over its iteration
// space (the left-hand side's indices, then the reduced ones): each tensor
// read is a view of the tensor broadcast over that space (strides from the
// affine index forms; a Gather only for indices that are not affine), index
// variables used as values are iotas, and operators and functions are the op
// library's, so nothing here is a new kind of node.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lumen/core/tensor.h"
#include "lumen/tc/ast.h"
#include "lumen/tc/scope.h"

namespace lumen::tc {

// One dim of the iteration space.
struct IterDim {
  std::string var;
  Range range;
};

// The value of `e` at every point of `space` (shape: the ranges' extents), in
// the dtype its operands give; types are checked with carets at the source.
Tensor lower_body(const Ast& e, const std::vector<IterDim>& space, const Scope& scope);

// A read of `tensor` through affine indices over `space` as one strided view
// (no data moves); `coeff[j][d]` is index j's coefficient of dim d.
Tensor strided_read(const Tensor& tensor, const std::vector<std::vector<int64_t>>& coeff,
                    const std::vector<int64_t>& constant, const std::vector<IterDim>& space);

}  // namespace lumen::tc
