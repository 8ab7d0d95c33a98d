#include "lumen/passes/view_adjoint.h"

#include <algorithm>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"

namespace lumen::passes {

namespace {

// Overlapping windows (unfold with step < size) are scattered one window
// offset at a time; beyond this many copies the graph would be unreasonable.
constexpr int64_t kMaxOverlapCopies = 512;

struct Dim {
  Expr size;
  Expr stride;
};

bool provably_zero(const Expr& e) { return simplify(e).is_const(0); }

// The last axis of `t` padded with `after` zeros (no-op when provably 0).
Tensor pad_last(const Tensor& t, const Expr& before, const Expr& after) {
  if (provably_zero(before) && provably_zero(after)) return t;
  std::vector<std::pair<Expr, Expr>> padding(t.rank(), {Expr(0), Expr(0)});
  padding.back() = {simplify(before), simplify(after)};
  return t.pad(padding);
}

// Merges the last two axes of `t`.
Tensor merge_last(const Tensor& t) {
  Shape s = t.shape();
  Expr inner = s.back();
  s.pop_back();
  s.back() = simplify(s.back() * inner);
  return t.reshape(s);
}

bool stride_ge(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return a.value() >= b.value();
  return prove(ge(a, b));
}

Tensor scatter_flat(const Tensor& grad, const std::vector<Dim>& dims, const Expr& offset, const Expr& numel,
                    const View& view);

// Splits the smallest concrete dim among dims[from..] into its positions:
// the sum of each position's scatter.
Tensor scatter_split(const Tensor& grad, const std::vector<Dim>& dims, size_t from, const Expr& offset,
                     const Expr& numel, const View& view) {
  size_t best = dims.size();
  for (size_t d = from; d < dims.size(); ++d) {
    if (!dims[d].size.is_const()) continue;
    if (best == dims.size() || dims[d].size.value() < dims[best].size.value()) best = d;
  }
  if (best == dims.size() || dims[best].size.value() > kMaxOverlapCopies) {
    fail("autodiff: the view ", view.to_string(), " reads overlapping windows along dims with no small concrete size; ",
         "its adjoint would need more than ", kMaxOverlapCopies, " shifted copies (materialise the windows with "
         "contiguous() on a smaller tensor, or use concrete window sizes)");
  }
  std::vector<Dim> rest = dims;
  rest.erase(rest.begin() + static_cast<long>(best));
  Tensor sum;
  for (int64_t m = 0; m < dims[best].size.value(); ++m) {
    Tensor part = grad.slice(static_cast<int>(best), Expr(m), Expr(m + 1)).squeeze(static_cast<int>(best));
    Tensor flat = scatter_flat(part, rest, simplify(offset + dims[best].stride * Expr(m)), numel, view);
    sum = sum.defined() ? sum.add(flat) : flat;
  }
  return sum;
}

// `grad` (shape = the dims' sizes, strides positive and sorted descending)
// scattered into a flat buffer of `numel` elements starting at `offset`.
Tensor scatter_flat(const Tensor& grad, const std::vector<Dim>& dims, const Expr& offset, const Expr& numel,
                    const View& view) {
  if (dims.empty()) {
    Tensor one = grad.reshape({Expr(1)});
    return pad_last(one, offset, numel - offset - 1);
  }
  Tensor acc = grad;
  Expr span = Expr(1);  // extent of the merged trailing axis, which has stride 1
  Expr remaining = offset;  // the part of the offset not yet placed by a level's padding
  for (size_t k = dims.size(); k-- > 0;) {
    const Dim& d = dims[k];
    bool innermost = k + 1 == dims.size();
    if (!innermost && !stride_ge(d.stride, span)) {  // windows overlap: split (or a clear error)
      return scatter_split(grad, dims, 0, offset, numel, view);
    }
    // [..., size, span] -> [..., size, stride] -> [..., size*stride], trimmed to what is reached.
    // The offset's remainder within a stride goes before each block when it fits in the gap, so
    // the padding (a mask in the consumer) is on this level's dim, not on the flat index: the
    // gradient of qkv[1] of a [B, T, 3·H·D] projection pads [B, T, H·D] to [B, T, 3·H·D]
    // at 128, a range of the last dim, instead of a flat range that crosses rows.
    Expr before = Expr(0);
    if (remaining.is_const() && d.stride.is_const() && span.is_const() && d.stride.value() > 0) {
      int64_t o = remaining.value() % d.stride.value();
      if (o > 0 && o + span.value() <= d.stride.value()) before = Expr(o);
    }
    Tensor t = innermost ? acc.unsqueeze(-1) : acc;
    t = pad_last(t, before, d.stride - span - before);
    acc = merge_last(t);
    remaining = simplify(remaining - before);
    Expr whole = simplify(d.size * d.stride), reached = simplify((d.size - 1) * d.stride + before + span);
    // Whole periods are kept when the next level (or the buffer) has room for them: no slice.
    const Expr& room = k > 0 ? dims[k - 1].stride : simplify(numel - remaining);
    bool keep_whole = whole.is_const() && room.is_const() && whole.value() <= room.value();
    if (!keep_whole && !simplify(whole - reached).is_const(0)) {
      acc = acc.slice(-1, Expr(0), reached);
    }
    span = keep_whole ? whole : reached;
  }
  // Whole periods kept at inner levels may end past the buffer: that tail is padding.
  Expr room = simplify(numel - remaining);
  if (span.is_const() && room.is_const() && span.value() > room.value()) {
    acc = acc.slice(-1, Expr(0), room);
    span = room;
  }
  return pad_last(acc, remaining, numel - remaining - span);
}

// The adjoint of one layer: `grad` over the layer's shape to a gradient over
// the contiguous array of shape `below` that the layer indexes.
Tensor layer_adjoint(const ViewLayer& layer, const Shape& below, Tensor grad, const View& view) {
  Expr offset = layer.offset;
  std::vector<Dim> dims;
  for (size_t d = 0; d < layer.shape.size(); ++d) dims.push_back({layer.shape[d], layer.strides[d]});
  if (!layer.mask.empty()) {  // padding reads nothing: keep the valid range only
    for (size_t d = 0; d < dims.size(); ++d) {
      auto [begin, end] = layer.mask[d];
      if (provably_zero(begin) && provably_zero(simplify(end - dims[d].size))) continue;
      grad = grad.slice(static_cast<int>(d), begin, end);
      offset = offset + begin * dims[d].stride;
      dims[d].size = simplify(end - begin);
    }
  }
  for (size_t d = dims.size(); d-- > 0;) {  // broadcast dims sum; size-1 dims vanish
    if (dims[d].stride.is_const(0)) {
      grad = grad.sum_reduce(static_cast<int>(d));
      dims.erase(dims.begin() + static_cast<long>(d));
    } else if (dims[d].size.is_const(1)) {
      grad = grad.squeeze(static_cast<int>(d));
      dims.erase(dims.begin() + static_cast<long>(d));
    }
  }
  for (size_t d = 0; d < dims.size(); ++d) {  // flips become positive strides
    bool negative = dims[d].stride.is_const() ? dims[d].stride.value() < 0 : prove(lt(dims[d].stride, Expr(0)));
    if (!negative) continue;
    grad = grad.flip(static_cast<int>(d));
    offset = offset + (dims[d].size - 1) * dims[d].stride;
    dims[d].stride = simplify(-dims[d].stride);
  }
  std::vector<int> order(dims.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int>(d);
  for (size_t i = 1; i < order.size(); ++i) {  // insertion sort by stride, descending (stable)
    for (size_t j = i; j > 0; --j) {
      const Expr& a = dims[static_cast<size_t>(order[j - 1])].stride;
      const Expr& b = dims[static_cast<size_t>(order[j])].stride;
      if (stride_ge(a, b)) break;
      if (!stride_ge(b, a)) {
        fail("autodiff: cannot order the strides ", a, " and ", b, " of the view ", view.to_string(),
             " (symbolic strides); its adjoint needs them ordered");
      }
      std::swap(order[j - 1], order[j]);
    }
  }
  std::vector<Dim> sorted;
  for (int o : order) sorted.push_back(dims[static_cast<size_t>(o)]);
  bool identity_order = std::is_sorted(order.begin(), order.end());
  if (!identity_order) grad = grad.permute(order);
  Expr numel = shape_numel(below);
  return scatter_flat(grad, sorted, simplify(offset), numel, view).reshape(below);
}

}  // namespace

Tensor view_adjoint(const View& view, const Tensor& grad) {
  bool same_size = simplify(shape_numel(view.shape()) - shape_numel(view.base_shape())).is_const(0);
  if (view.is_contiguous() && same_size) {  // a plain reshape (or nothing); a prefix slice is "contiguous" too
    return view.shape() == view.base_shape() ? grad : grad.reshape(view.base_shape());
  }
  for (const Expr& d : view.base_shape()) {
    if (d.is_const(0)) return grad.graph()->constant(0, grad.dtype()).expand(view.base_shape()).contiguous();
  }
  for (const Expr& d : view.shape()) {
    if (d.is_const(0)) return grad.graph()->constant(0, grad.dtype()).expand(view.base_shape()).contiguous();
  }
  const auto& layers = view.layers();
  Tensor g = grad;
  for (size_t k = layers.size(); k-- > 0;) {
    const Shape& below = k > 0 ? layers[k - 1].shape : view.base_shape();
    g = layer_adjoint(layers[k], below, g, view);
  }
  return g;
}

}  // namespace lumen::passes
