#include "lumen/core/view.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "lumen/core/error.h"
#include "lumen/core/linear_form.h"
#include "lumen/core/simplify.h"

namespace lumen {

namespace {

bool is_one(const Expr& e) { return e.is_const(1); }

bool mask_is_full(const std::pair<Expr, Expr>& m, const Expr& size) {
  return prove(le(m.first, Expr(0))) && prove(ge(m.second, size));
}

// True if `a` divides `b` exactly, as products of dims (constants or monomials).
bool divides(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return a.value() != 0 && b.value() % a.value() == 0;
  auto fa = LinearForm::of(a), fb = LinearForm::of(b);
  if (!fa || !fb) return false;
  if (fa->is_constant()) return fa->constant != 0 && fb->gcd() % fa->constant == 0;
  if (fa->terms.size() != 1 || fa->constant != 0 || fb->terms.size() != 1 || fb->constant != 0) return a == b;
  int64_t ca = fa->terms[0].second, cb = fb->terms[0].second;
  if (cb % ca != 0) return false;
  std::vector<Expr> remaining = product_factors(fb->terms[0].first);
  for (const Expr& f : product_factors(fa->terms[0].first)) {
    auto it = std::find(remaining.begin(), remaining.end(), f);
    if (it == remaining.end()) return false;
    remaining.erase(it);
  }
  return true;
}

// Shape conditions are rejected only when provably false: a condition on a
// dynamic dim that may hold is checked when the dim is bound (Graph constraints).
bool disproved(const Expr& condition) { return prove(logical_not(condition)); }

void check_dim(const char* op, int dim, size_t rank, const Shape& shape) {
  if (dim < 0 || static_cast<size_t>(dim) >= rank) {
    fail(op, ": dim ", dim, " is out of range for shape ", lumen::to_string(shape), " (rank ", rank, ")");
  }
}

struct StridedDim {
  Expr size, stride;
  std::optional<std::pair<Expr, Expr>> mask;  // set only when partial
};

// Tries to express `new_shape` over the same memory with strides alone.
std::optional<ViewLayer> reshape_layer(const ViewLayer& layer, const Shape& new_shape) {
  std::vector<StridedDim> old;
  for (size_t d = 0; d < layer.shape.size(); ++d) {
    std::optional<std::pair<Expr, Expr>> m;
    if (!layer.mask.empty() && !mask_is_full(layer.mask[d], layer.shape[d])) m = layer.mask[d];
    if (is_one(layer.shape[d])) {
      if (m) return std::nullopt;  // a size-1 dim that reads padding
      continue;
    }
    old.push_back({layer.shape[d], layer.strides[d], m});
  }
  std::vector<size_t> wanted;
  for (size_t d = 0; d < new_shape.size(); ++d) {
    if (!is_one(new_shape[d])) wanted.push_back(d);
  }

  ViewLayer out;
  out.shape = new_shape;
  out.strides.assign(new_shape.size(), Expr(0));
  out.offset = layer.offset;
  std::vector<std::pair<Expr, Expr>> mask(new_shape.size());
  for (size_t d = 0; d < new_shape.size(); ++d) mask[d] = {Expr(0), new_shape[d]};
  bool any_mask = false;

  size_t i = 0, j = 0;
  while (i < old.size() || j < wanted.size()) {
    if (i >= old.size() || j >= wanted.size()) return std::nullopt;
    size_t i_end = i + 1, j_end = j + 1;
    Expr acc_old = old[i].size, acc_new = new_shape[wanted[j]];
    while (simplify(acc_old) != simplify(acc_new)) {
      if (divides(acc_old, acc_new) && i_end < old.size()) {
        acc_old = simplify(acc_old * old[i_end++].size);
      } else if (divides(acc_new, acc_old) && j_end < wanted.size()) {
        acc_new = simplify(acc_new * new_shape[wanted[j_end++]]);
      } else {
        return std::nullopt;
      }
    }
    for (size_t k = i; k + 1 < i_end; ++k) {
      if (simplify(old[k].stride) != simplify(old[k + 1].stride * old[k + 1].size)) return std::nullopt;
    }
    for (size_t k = i; k < i_end; ++k) {
      if (!old[k].mask) continue;
      if (i_end - i != 1 || j_end - j != 1) return std::nullopt;  // a partial mask cannot be split or merged
      mask[wanted[j]] = *old[k].mask;
      any_mask = true;
    }
    Expr stride = old[i_end - 1].stride;
    for (size_t k = j_end; k-- > j;) {
      out.strides[wanted[k]] = simplify(stride);
      stride = stride * new_shape[wanted[k]];
    }
    i = i_end;
    j = j_end;
  }
  if (any_mask) out.mask = mask;
  return out;
}

}  // namespace

bool ViewLayer::operator==(const ViewLayer& other) const {
  return shape == other.shape && strides == other.strides && offset == other.offset && mask == other.mask;
}

std::vector<Expr> contiguous_strides(const Shape& shape) {
  std::vector<Expr> strides(shape.size(), Expr(1));
  Expr running = Expr(1);
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = is_one(shape[d]) ? Expr(0) : running;
    running = simplify(running * shape[d]);
  }
  return strides;
}

Expr shape_numel(const Shape& shape) {
  Expr n = Expr(1);
  for (const Expr& d : shape) n = n * d;
  return simplify(n);
}

Expr loop_index(const Shape& shape, size_t d) { return Expr::index("i" + std::to_string(d), shape[d]); }

std::vector<Expr> loop_indices(const Shape& shape) {
  std::vector<Expr> idx;
  for (size_t d = 0; d < shape.size(); ++d) idx.push_back(loop_index(shape, d));
  return idx;
}

View View::contiguous(const Shape& shape) {
  for (const Expr& d : shape) {
    if (!d.defined()) fail("view: shape ", lumen::to_string(shape), " has an undefined dim");
    if (d.hi() < 0) fail("view: shape ", lumen::to_string(shape), " has a negative dim");
  }
  ViewLayer layer;
  layer.shape = shape;
  layer.strides = contiguous_strides(shape);
  return View(shape, {layer});
}

View View::permute(const std::vector<int>& order) const {
  size_t n = rank();
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  bool ok = sorted.size() == n;
  for (size_t d = 0; ok && d < n; ++d) ok = sorted[d] == static_cast<int>(d);
  if (!ok) {
    std::ostringstream o;
    for (size_t d = 0; d < order.size(); ++d) o << (d ? ", " : "") << order[d];
    fail("permute: order [", o.str(), "] is not a permutation of the ", n, " dims of shape ", lumen::to_string(shape()));
  }
  View v = *this;
  const ViewLayer& src = layers_.back();
  ViewLayer& dst = v.top();
  for (size_t d = 0; d < n; ++d) {
    auto s = static_cast<size_t>(order[d]);
    dst.shape[d] = src.shape[s];
    dst.strides[d] = src.strides[s];
    if (!src.mask.empty()) dst.mask[d] = src.mask[s];
  }
  return v;
}

View View::reshape(const Shape& new_shape) const {
  Expr old_numel = shape_numel(shape()), new_numel = shape_numel(new_shape);
  if (old_numel != new_numel) {
    fail("reshape: cannot view shape ", lumen::to_string(shape()), " (", old_numel, " elements) as ", lumen::to_string(new_shape),
         " (", new_numel, " elements)");
  }
  for (const Expr& d : new_shape) {
    if (d.hi() < 0) fail("reshape: target shape ", lumen::to_string(new_shape), " has a negative dim");
  }
  View v = *this;
  const ViewLayer& layer = layers_.back();
  bool plain = layer.mask.empty() && layer.strides == contiguous_strides(layer.shape);
  if (plain) {
    v.top().shape = new_shape;
    v.top().strides = contiguous_strides(new_shape);
    return v;
  }
  if (auto merged = reshape_layer(layer, new_shape)) {
    v.top() = *merged;
    return v;
  }
  ViewLayer fresh;
  fresh.shape = new_shape;
  fresh.strides = contiguous_strides(new_shape);
  v.layers_.push_back(fresh);
  return v;
}

View View::expand(const Shape& new_shape) const {
  if (new_shape.size() != rank()) {
    fail("expand: shape ", lumen::to_string(shape()), " cannot expand to ", lumen::to_string(new_shape),
         " (ranks differ; reshape to add dims first)");
  }
  View v = *this;
  ViewLayer& layer = v.top();
  for (size_t d = 0; d < rank(); ++d) {
    if (simplify(new_shape[d]) == simplify(layer.shape[d])) continue;
    if (!is_one(layer.shape[d])) {
      fail("expand: dim ", d, " of shape ", lumen::to_string(shape()), " is ", layer.shape[d], ", not 1, so it cannot expand to ",
           new_shape[d], " (target ", lumen::to_string(new_shape), ")");
    }
    layer.shape[d] = new_shape[d];
    layer.strides[d] = Expr(0);
    if (!layer.mask.empty()) {
      bool valid = prove(le(layer.mask[d].first, Expr(0))) && prove(ge(layer.mask[d].second, Expr(1)));
      layer.mask[d] = valid ? std::make_pair(Expr(0), new_shape[d]) : std::make_pair(Expr(0), Expr(0));
    }
  }
  return v;
}

View View::slice(int dim, Expr begin, Expr end, int64_t step) const {
  check_dim("slice", dim, rank(), shape());
  auto d = static_cast<size_t>(dim);
  const Expr size = shape()[d];
  if (step < 1) fail("slice: step must be >= 1, got ", step, " (use flip for reversed order)");
  if (disproved(ge(begin, Expr(0))) || disproved(le(begin, end)) || disproved(le(end, size))) {
    fail("slice: range [", begin, ", ", end, ") is not within dim ", dim, " of shape ", lumen::to_string(shape()),
         " (need 0 <= begin <= end <= ", size, ")");
  }
  View v = *this;
  ViewLayer& layer = v.top();
  Expr new_size = simplify((end - begin + (step - 1)) / step);
  layer.offset = simplify(layer.offset + begin * layer.strides[d]);
  layer.strides[d] = simplify(layer.strides[d] * step);
  layer.shape[d] = new_size;
  if (!layer.mask.empty()) {
    auto [mb, me] = layer.mask[d];
    Expr nb = simplify(max(Expr(0), (mb - begin + (step - 1)) / step));
    Expr ne = simplify(min(new_size, max(Expr(0), (me - begin + (step - 1)) / step)));
    layer.mask[d] = {nb, ne};
  }
  return v;
}

View View::flip(int dim) const {
  check_dim("flip", dim, rank(), shape());
  auto d = static_cast<size_t>(dim);
  View v = *this;
  ViewLayer& layer = v.top();
  Expr size = layer.shape[d];
  layer.offset = simplify(layer.offset + (size - 1) * layer.strides[d]);
  layer.strides[d] = simplify(-layer.strides[d]);
  if (!layer.mask.empty()) {
    auto [mb, me] = layer.mask[d];
    layer.mask[d] = {simplify(size - me), simplify(size - mb)};
  }
  return v;
}

View View::pad(const std::vector<std::pair<Expr, Expr>>& padding) const {
  if (padding.size() != rank()) {
    fail("pad: ", padding.size(), " (before, after) pairs given for shape ", lumen::to_string(shape()), " of rank ", rank());
  }
  View v = *this;
  ViewLayer& layer = v.top();
  bool any = false;
  for (size_t d = 0; d < rank(); ++d) {
    const auto& [before, after] = padding[d];
    if (disproved(ge(before, Expr(0))) || disproved(ge(after, Expr(0)))) {
      fail("pad: amounts (", before, ", ", after, ") for dim ", d, " of shape ", lumen::to_string(shape()),
           " must be >= 0 (slice to remove elements)");
    }
    if (!(before.is_const(0) && after.is_const(0))) any = true;
  }
  if (!any) return v;
  if (layer.mask.empty()) {
    for (size_t d = 0; d < rank(); ++d) layer.mask.emplace_back(Expr(0), layer.shape[d]);
  }
  for (size_t d = 0; d < rank(); ++d) {
    const auto& [before, after] = padding[d];
    layer.offset = simplify(layer.offset - before * layer.strides[d]);
    layer.mask[d] = {simplify(layer.mask[d].first + before), simplify(layer.mask[d].second + before)};
    layer.shape[d] = simplify(layer.shape[d] + before + after);
  }
  return v;
}

View View::unfold(int dim, int64_t size, int64_t step, int64_t dilation) const {
  check_dim("unfold", dim, rank(), shape());
  auto d = static_cast<size_t>(dim);
  if (size < 1 || step < 1 || dilation < 1) {
    fail("unfold: size, step and dilation must be >= 1, got ", size, ", ", step, ", ", dilation);
  }
  Expr span = Expr((size - 1) * dilation + 1);
  if (disproved(le(span, shape()[d]))) {
    fail("unfold: a window spans ", span, " elements but dim ", dim, " of shape ", lumen::to_string(shape()),
         " has only ", shape()[d]);
  }
  View v = *this;
  const ViewLayer& current = v.layers_.back();
  bool masked = !current.mask.empty() && !mask_is_full(current.mask[d], current.shape[d]);
  if (masked) {  // validity would depend on w*step + k*dilation: index the padded array through a new layer
    ViewLayer fresh;
    fresh.shape = current.shape;
    fresh.strides = contiguous_strides(current.shape);
    v.layers_.push_back(fresh);
  }
  ViewLayer& layer = v.top();
  Expr stride = layer.strides[d];
  Expr windows = simplify((layer.shape[d] - span) / step + 1);
  layer.shape[d] = windows;
  layer.strides[d] = simplify(stride * step);
  layer.shape.insert(layer.shape.begin() + dim + 1, Expr(size));
  layer.strides.insert(layer.strides.begin() + dim + 1, simplify(stride * dilation));
  if (!layer.mask.empty()) {
    layer.mask[d] = {Expr(0), windows};
    layer.mask.insert(layer.mask.begin() + dim + 1, {Expr(0), Expr(size)});
  }
  return v;
}

View View::then(const View& next) const {
  if (next.base_.size() != rank() || !std::equal(next.base_.begin(), next.base_.end(), shape().begin(),
                                                  [](const Expr& a, const Expr& b) { return simplify(a) == simplify(b); })) {
    fail("view: cannot read a view of shape ", lumen::to_string(next.base_), " from one of shape ", lumen::to_string(shape()));
  }
  auto plain = [](const ViewLayer& l) {
    return l.mask.empty() && l.offset.is_const(0) && l.strides == contiguous_strides(l.shape);
  };
  View out = *this;
  size_t first = 0;
  if (plain(next.layers_[0]) && simplify(shape_numel(next.layers_[0].shape)) == simplify(shape_numel(shape()))) {
    out = out.reshape(next.layers_[0].shape);  // a row-major re-index: reshape knows how to merge it
    first = 1;
  } else if (plain(out.top())) {
    out.top() = next.layers_[0];  // the plain top layer's flat index is exactly next's first layer's
    first = 1;
  }
  for (size_t k = first; k < next.layers_.size(); ++k) out.layers_.push_back(next.layers_[k]);
  return out;
}

View View::strided(const Shape& base, const Shape& shape, const std::vector<Expr>& strides, Expr offset) {
  if (strides.size() != shape.size()) {
    fail("view: ", strides.size(), " strides given for shape ", lumen::to_string(shape));
  }
  for (const Expr& d : shape) {
    if (!d.defined() || d.hi() < 0) fail("view: shape ", lumen::to_string(shape), " has an invalid dim");
  }
  ViewLayer layer;
  layer.shape = shape;
  layer.strides = strides;
  layer.offset = std::move(offset);
  return View(base, {layer});
}

View::Index View::index(const std::vector<Expr>& idx) const { return index(idx, false); }

Expr View::clamped_index(const std::vector<Expr>& idx) const { return index(idx, true).index; }

View::Index View::index(const std::vector<Expr>& idx, bool clamp_masked) const {
  if (idx.size() != rank()) fail("view: ", idx.size(), " indices given for shape ", lumen::to_string(shape()));
  std::vector<Expr> current = idx;
  Expr valid = Expr(1);
  for (size_t k = layers_.size(); k-- > 0;) {
    const ViewLayer& layer = layers_[k];
    Expr flat = layer.offset;
    for (size_t d = 0; d < current.size(); ++d) {
      Expr at = current[d];
      if (!layer.mask.empty()) {
        valid = logical_and(valid, logical_and(ge(current[d], layer.mask[d].first), lt(current[d], layer.mask[d].second)));
        if (clamp_masked) at = simplify(max(min(at, layer.mask[d].second - 1), layer.mask[d].first));
      }
      flat = flat + at * layer.strides[d];
    }
    flat = simplify(flat);
    valid = simplify(valid);
    if (k == 0) return {flat, valid};
    const Shape& below = layers_[k - 1].shape;
    current.assign(below.size(), Expr(0));
    Expr inner = Expr(1);
    if (std::any_of(below.begin(), below.end(), [](const Expr& d) { return d.is_const(0); })) {
      return {Expr(0), Expr(0)};  // an empty tensor: there is no element to index
    }
    for (size_t d = below.size(); d-- > 0;) {
      Expr coordinate = flat / inner;
      current[d] = simplify(d == 0 ? coordinate : coordinate % below[d]);
      inner = simplify(inner * below[d]);
    }
  }
  return {Expr(0), Expr(1)};
}

View::Index View::index() const { return index(loop_indices(shape())); }

bool View::is_contiguous() const {
  if (layers_.size() != 1) return false;
  const ViewLayer& layer = layers_[0];
  return layer.mask.empty() && layer.offset.is_const(0) && layer.strides == contiguous_strides(layer.shape);
}

bool View::has_mask() const {
  return std::any_of(layers_.begin(), layers_.end(), [](const ViewLayer& l) { return !l.mask.empty(); });
}

Expr View::injective_condition() const {
  if (has_mask()) return Expr(0);
  Expr all = Expr(1);
  for (const ViewLayer& layer : layers_) {
    // Sorted by |stride|, each stride must step past everything the smaller
    // strides reach: stride_i >= 1 + sum over smaller j of stride_j * (extent_j - 1).
    std::vector<std::pair<int64_t, Expr>> dims;
    for (size_t d = 0; d < layer.shape.size(); ++d) {
      const Expr& extent = layer.shape[d];
      if (extent.hi() <= 1) continue;
      if (!layer.strides[d].is_const()) return Expr(0);
      int64_t stride = std::abs(layer.strides[d].value());
      if (stride == 0) {
        all = logical_and(all, le(extent, Expr(1)));
        continue;
      }
      dims.emplace_back(stride, extent);
    }
    std::stable_sort(dims.begin(), dims.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    Expr reach = Expr(1);
    for (const auto& [stride, extent] : dims) {
      all = logical_and(all, le(reach, Expr(stride)));
      reach = reach + Expr(stride) * (extent - 1);
    }
  }
  return simplify(all);
}

View View::bind(const Bindings& bindings) const {
  View v = *this;
  auto sub = [&](Expr& e) { e = simplify(substitute(e, bindings)); };
  for (Expr& e : v.base_) sub(e);
  for (ViewLayer& layer : v.layers_) {
    for (Expr& e : layer.shape) sub(e);
    for (Expr& e : layer.strides) sub(e);
    sub(layer.offset);
    for (auto& [b, e] : layer.mask) {
      sub(b);
      sub(e);
    }
  }
  return v;
}

std::string View::to_string() const {
  std::ostringstream out;
  for (size_t k = 0; k < layers_.size(); ++k) {
    const ViewLayer& l = layers_[k];
    if (k) out << " -> ";
    out << "{shape " << lumen::to_string(l.shape) << " strides " << lumen::to_string(l.strides) << " offset "
        << l.offset;
    if (!l.mask.empty()) {
      out << " mask [";
      for (size_t d = 0; d < l.mask.size(); ++d) out << (d ? ", " : "") << l.mask[d].first << ":" << l.mask[d].second;
      out << "]";
    }
    out << "}";
  }
  return out.str();
}

}  // namespace lumen
