// View — the shape tracker: how a tensor's logical elements map onto the flat
// buffer of the node that produced them. Movement ops (permute, reshape,
// expand, slice, flip, pad) only change the View; no data moves.
//
// A View is a stack of layers. Each layer has a shape, strides, an offset and
// an optional validity mask per dim (padding reads as zero). Layer 0 indexes
// the buffer; layer k indexes the contiguous logical array of layer k-1's
// shape. Most chains stay one layer; a reshape that cannot be expressed with
// strides (e.g. merging permuted dims) pushes a new layer instead of copying.
//
// `index(idx)` turns a logical index into {flat buffer index, validity}.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lumen/core/expr.h"
#include "lumen/core/expr_eval.h"

namespace lumen {

using Shape = std::vector<Expr>;

struct ViewLayer {
  Shape shape;
  std::vector<Expr> strides;
  Expr offset = Expr(0);
  std::vector<std::pair<Expr, Expr>> mask;  // [begin, end) per dim; empty: every index valid

  bool operator==(const ViewLayer& other) const;
};

class View {
 public:
  View() = default;
  static View contiguous(const Shape& shape);

  const Shape& shape() const { return layers_.back().shape; }
  // The shape of the contiguous buffer this view reads (what contiguous() got).
  const Shape& base_shape() const { return base_; }
  size_t rank() const { return shape().size(); }
  const std::vector<ViewLayer>& layers() const { return layers_; }

  // `order[i]` is the source dim placed at position i.
  View permute(const std::vector<int>& order) const;
  View reshape(const Shape& new_shape) const;
  // Dims of size 1 may grow to any size; other dims must stay equal.
  View expand(const Shape& new_shape) const;
  // Elements begin, begin+step, ... < end of `dim`; 0 <= begin <= end <= size, step >= 1.
  View slice(int dim, Expr begin, Expr end, int64_t step = 1) const;
  View flip(int dim) const;
  // Adds `before` and `after` invalid (zero-reading) positions to each dim.
  View pad(const std::vector<std::pair<Expr, Expr>>& padding) const;
  // Sliding windows (torch.Tensor.unfold with dilation): dim d of extent n
  // becomes two dims [windows, size], window w reading w*step + k*dilation.
  View unfold(int dim, int64_t size, int64_t step, int64_t dilation = 1) const;
  // Reading through this view, then through `next` (whose base shape is this
  // view's shape): one view from this base to next's shape (layers stacked,
  // merged where a layer is a plain row-major index).
  View then(const View& next) const;
  // A buffer of shape `base` seen as `shape` with the given element strides
  // and offset (torch's as_strided). Positions outside the buffer are the
  // caller's to avoid: graph rewrites use it to read a smaller buffer (one
  // chunk of a larger one) through a larger one's views.
  static View strided(const Shape& base, const Shape& shape, const std::vector<Expr>& strides, Expr offset = Expr(0));

  struct Index {
    Expr index;  // flat position in the source buffer
    Expr valid;  // 0 where the element is padding
  };
  Index index(const std::vector<Expr>& idx) const;
  // Index for the canonical loop variables i0, i1, ... over this view's shape.
  Index index() const;
  // index(idx).index with each coordinate of a masked dim clamped into its
  // mask first: the same position wherever the view is valid, and one inside
  // the source everywhere (a padded view's flat index leaves the source at the
  // padding, and turned into coordinates there it takes divisions).
  Expr clamped_index(const std::vector<Expr>& idx) const;

  // True if reading through this view is reading the buffer in order.
  bool is_contiguous() const;
  bool has_mask() const;
  // A condition on the dynamic dims under which distinct logical indices
  // reach distinct buffer positions (no broadcast, padding or overlapping
  // windows): when a view may be written through. Constant 0 if never
  // (or if it cannot tell), 1 if always.
  Expr injective_condition() const;
  // Substitutes bound dynamic dims.
  View bind(const Bindings& bindings) const;

  bool operator==(const View& other) const { return base_ == other.base_ && layers_ == other.layers_; }
  bool operator!=(const View& other) const { return !(*this == other); }
  std::string to_string() const;

 private:
  View(Shape base, std::vector<ViewLayer> layers) : base_(std::move(base)), layers_(std::move(layers)) {}
  Index index(const std::vector<Expr>& idx, bool clamp_masked) const;
  ViewLayer& top() { return layers_.back(); }

  Shape base_;
  std::vector<ViewLayer> layers_;
};

// Row-major strides of `shape`, simplified.
std::vector<Expr> contiguous_strides(const Shape& shape);
// Product of the dims, simplified.
Expr shape_numel(const Shape& shape);
// The canonical loop index variable for dim `d` of `shape`: "i<d>" over [0, shape[d]).
Expr loop_index(const Shape& shape, size_t d);
std::vector<Expr> loop_indices(const Shape& shape);

}  // namespace lumen
