#include "lumen/ops/indexing.h"

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/ops/elementwise.h"

namespace lumen::ops {

namespace {

// Integer indices as i32, or i64 kept as i64 (never narrowed: an index past
// 2^31 must fail its range check, not wrap into range).
Tensor as_index(const Tensor& t, const char* op) {
  if (t.dtype() == DType::I32 || t.dtype() == DType::I64) return t;
  if (t.dtype() == DType::Bool || is_float(t.dtype())) {
    fail(op, ": indices must be integers, got ", dtype_name(t.dtype()), " ", to_string(t.shape()));
  }
  return t.cast(DType::I32);
}

}  // namespace

Tensor gather(const Tensor& x, int dim, const Tensor& index) {
  Tensor idx = as_index(index, "gather");
  int a = x.axis(dim, "gather");
  if (idx.rank() != x.rank()) {
    fail("gather: index has rank ", idx.rank(), " (shape ", to_string(idx.shape()), ") but input ",
         to_string(x.shape()), " has rank ", x.rank(), "; they must match");
  }
  for (size_t d = 0; d < x.rank(); ++d) {
    if (static_cast<int>(d) == a) continue;
    if (!prove(le(idx.shape()[d], x.shape()[d]))) {
      fail("gather: index shape ", to_string(idx.shape()), " exceeds input shape ", to_string(x.shape()), " in dim ", d);
    }
  }
  // Flat position in x: the other coordinates come from the output position,
  // the `dim` coordinate from the index value.
  std::vector<Expr> strides = contiguous_strides(x.shape());
  std::vector<Expr> pos = loop_indices(idx.shape());
  Expr base = Expr(0);
  for (size_t d = 0; d < x.rank(); ++d) {
    if (static_cast<int>(d) != a) base = base + pos[d] * strides[d];
  }
  Graph* g = x.graph();
  DType it = idx.dtype();  // positions in the index dtype
  Tensor flat_base = g->iota(simplify(base), idx.shape(), it);
  Expr axis_size = x.shape()[static_cast<size_t>(a)];
  Tensor stride = g->iota(strides[static_cast<size_t>(a)].is_const(0) ? Expr(1) : strides[static_cast<size_t>(a)], {}, it);
  // An out-of-range index must fail, not read a neighbour: check it against the axis size.
  Tensor in_range = logical_and(ge(idx, g->iota(Expr(0), {}, it)), lt(idx, g->iota(axis_size, {}, it)));
  Tensor guarded = where(in_range, idx, g->iota(shape_numel(x.shape()), {}, it));
  Tensor flat = x.reshape({shape_numel(x.shape())});
  return flat.gather(flat_base.add(guarded.mul(stride)), 0);
}

Tensor take_along_dim(const Tensor& x, const Tensor& indices, int dim) {
  int a = x.axis(dim, "take_along_dim");
  if (indices.rank() != x.rank()) fail("take_along_dim: indices and input need the same rank");
  Shape xs = x.shape(), is = indices.shape();
  xs[static_cast<size_t>(a)] = Expr(1);
  is[static_cast<size_t>(a)] = Expr(1);
  Shape common = broadcast_shapes(xs, is, "take_along_dim");
  Shape x_target = common, i_target = common;
  x_target[static_cast<size_t>(a)] = x.shape()[static_cast<size_t>(a)];
  i_target[static_cast<size_t>(a)] = indices.shape()[static_cast<size_t>(a)];
  return gather(x.expand(x_target), a, indices.expand(i_target));
}

Tensor index_select(const Tensor& x, int dim, const Tensor& index) {
  Tensor idx = as_index(index, "index_select");
  if (idx.rank() != 1) fail("index_select: index must be 1-D, got shape ", to_string(idx.shape()));
  return x.gather(idx, dim);
}

Tensor embedding(const Tensor& indices, const Tensor& weight) {
  if (weight.rank() != 2) fail("embedding: weight must be 2-D [num, dim], got ", to_string(weight.shape()));
  return weight.gather(as_index(indices, "embedding"), 0);
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  Tensor idx = as_index(indices, "one_hot");
  if (num_classes <= 0) fail("one_hot: num_classes must be positive, got ", num_classes);
  Shape s{Expr(num_classes)};
  Tensor classes = idx.graph()->iota(loop_index(s, 0), s, DType::I32);
  return eq(idx.unsqueeze(-1), classes).cast(DType::I32);
}

}  // namespace lumen::ops
