#include "lumen/dist/view_split.h"

#include "lumen/core/error.h"
#include "lumen/core/linear_form.h"
#include "lumen/core/simplify.h"

namespace lumen::dist {

namespace {

// a / b when b provably divides a.
std::optional<Expr> exact_quotient(const Expr& a, const Expr& b) {
  if (b.is_const()) {
    if (b.value() == 0) return std::nullopt;
    auto form = LinearForm::of(simplify(a));
    if (!form || form->gcd() % b.value() != 0) return std::nullopt;
    return simplify(form->divided_by(b.value()).to_expr());
  }
  if (simplify(a) == simplify(b)) return Expr(1);
  Expr q = simplify(a / b);
  if (simplify(q * b) == simplify(a)) return q;
  return std::nullopt;
}

bool proven_equal(const Expr& a, const Expr& b) { return simplify(a) == simplify(b) || prove(eq(a, b)); }

// A condition: proven (dropped), disproven (the split does not show through), or kept.
bool add_condition(const Expr& c, std::vector<Expr>& conditions) {
  Expr s = simplify(c);
  if (prove(s)) return true;
  if (prove(logical_not(s))) return false;
  conditions.push_back(s);
  return true;
}

struct Offset {
  Expr outer = Expr(0);  // quotient of the part that is a multiple of Q
  Expr rest = Expr(0);   // the other terms
  int64_t constant = 0;  // the constant term, split between the two by the caller
};

Offset split_offset(const Expr& offset, const Expr& q) {
  Offset o;
  auto form = LinearForm::of(simplify(offset));
  if (!form) {
    o.rest = offset;
    return o;
  }
  for (const auto& [monomial, coefficient] : form->terms) {
    Expr term = monomial * Expr(coefficient);
    if (auto k = exact_quotient(term, q)) {
      o.outer = o.outer + *k;
    } else {
      o.rest = o.rest + term;
    }
  }
  o.constant = form->constant;
  o.rest = simplify(o.rest);
  o.outer = simplify(o.outer);
  return o;
}

// Valid index range [lo, hi] of dim j of a layer.
std::pair<Expr, Expr> index_range(const ViewLayer& layer, size_t j) {
  if (layer.mask.empty()) return {Expr(0), simplify(layer.shape[j] - 1)};
  return {layer.mask[j].first, simplify(layer.mask[j].second - 1)};
}

bool mask_full(const ViewLayer& layer, size_t j) {
  if (layer.mask.empty()) return true;
  return prove(le(layer.mask[j].first, Expr(0))) && prove(ge(layer.mask[j].second, layer.shape[j]));
}

// Everything below the split dim d — the offset's remainder and the other
// low dims — must stay in [0, T_d) for every valid index. A constant offset c
// is k whole blocks of Q plus a remainder; padding makes it negative, so the
// remainder is tried in [0, Q) and in [-Q, 0). On success `offset` holds the
// chosen split and the conditions needed are appended.
bool fit_below(Offset& offset, const Expr& q, const std::vector<std::pair<Expr, Expr>>& below, const Expr& step_d,
               std::vector<Expr>& conditions) {
  std::vector<int64_t> blocks{0};
  if (q.is_const() && q.value() > 0) {
    int64_t k = offset.constant >= 0 ? offset.constant / q.value() : -((-offset.constant + q.value() - 1) / q.value());
    blocks = {k, k + 1};
  }
  for (int64_t k : blocks) {
    Expr rest = simplify(offset.rest + Expr(offset.constant - k * (q.is_const() ? q.value() : 0)));
    Expr lo = rest, hi = rest;
    for (const auto& [low, high] : below) {
      lo = lo + low;
      hi = hi + high;
    }
    std::vector<Expr> trial;
    if (add_condition(ge(lo, Expr(0)), trial) && add_condition(le(hi, step_d - 1), trial)) {
      conditions.insert(conditions.end(), trial.begin(), trial.end());
      offset.outer = simplify(offset.outer + Expr(k));
      offset.rest = rest;
      return true;
    }
  }
  return false;
}

struct LayerSplit {
  int axis = -1;
  ViewLayer local;
};

// One layer over a contiguous input of shape `in`, split along `a`.
std::optional<LayerSplit> split_layer(const Shape& in, int a, int64_t parts, const ViewLayer& layer,
                                      std::vector<Expr>& conditions) {
  const Expr& extent = in[static_cast<size_t>(a)];
  if (!extent.is_const() || extent.value() % parts != 0) return std::nullopt;
  Expr p = contiguous_strides(in)[static_cast<size_t>(a)];
  Expr q = simplify(p * extent);
  Expr q_local = simplify(p * Expr(extent.value() / parts));
  size_t rank = layer.shape.size();
  enum class Kind { Broadcast, Outer, Low };
  std::vector<Kind> kind(rank, Kind::Low);
  std::vector<Expr> outer_step(rank);
  int d = -1;
  for (size_t j = 0; j < rank; ++j) {
    const Expr& t = layer.strides[j];
    if (simplify(t).is_const(0) || layer.shape[j].is_const(1)) {
      kind[j] = Kind::Broadcast;  // a size-1 dim reads one position: its index is always 0
      continue;
    }
    if (auto k = exact_quotient(t, q)) {
      kind[j] = Kind::Outer;
      outer_step[j] = *k;
      continue;
    }
    if (d < 0 && proven_equal(t * layer.shape[j], q) && prove(ge(t, Expr(0))) && mask_full(layer, j)) d = static_cast<int>(j);
  }
  if (d < 0) return std::nullopt;
  const Expr& size_d = layer.shape[static_cast<size_t>(d)];
  if (size_d.is_const() ? size_d.value() % parts != 0 : known_factor(size_d) % parts != 0) return std::nullopt;
  Offset offset = split_offset(layer.offset, q);
  std::vector<std::pair<Expr, Expr>> below;  // the lowest and highest offsets of the low dims other than d
  for (size_t j = 0; j < rank; ++j) {
    if (kind[j] != Kind::Low || static_cast<int>(j) == d) continue;
    const Expr& t = layer.strides[j];
    auto [first, last] = index_range(layer, j);
    if (prove(ge(t, Expr(0)))) {
      below.emplace_back(t * first, t * last);
    } else if (prove(le(t, Expr(0)))) {
      below.emplace_back(t * last, t * first);  // a reversed dim reaches its low end at the last index
    } else {
      return std::nullopt;
    }
  }
  if (!fit_below(offset, q, below, layer.strides[static_cast<size_t>(d)], conditions)) return std::nullopt;
  LayerSplit out;
  out.axis = d;
  out.local = layer;
  out.local.shape[static_cast<size_t>(d)] = simplify(size_d / Expr(parts));
  for (size_t j = 0; j < rank; ++j) {
    if (kind[j] == Kind::Outer) out.local.strides[j] = simplify(outer_step[j] * q_local);
  }
  out.local.offset = simplify(offset.outer * q_local + offset.rest);
  if (!out.local.mask.empty()) out.local.mask[static_cast<size_t>(d)] = {Expr(0), out.local.shape[static_cast<size_t>(d)]};
  return out;
}

View layer_view(const Shape& base, const ViewLayer& layer) {
  if (layer.mask.empty()) return View::strided(base, layer.shape, layer.strides, layer.offset);
  Shape valid;
  Expr offset = layer.offset;
  std::vector<std::pair<Expr, Expr>> padding;
  for (size_t j = 0; j < layer.shape.size(); ++j) {
    const auto& [begin, end] = layer.mask[j];
    valid.push_back(simplify(end - begin));
    offset = offset + begin * layer.strides[j];
    padding.emplace_back(begin, simplify(layer.shape[j] - end));
  }
  return View::strided(base, valid, layer.strides, simplify(offset)).pad(padding);
}

}  // namespace

Shape split_shape(const Shape& shape, int axis, int64_t parts) {
  if (axis < 0 || static_cast<size_t>(axis) >= shape.size()) {
    fail("dist: split axis ", axis, " is out of range for shape ", to_string(shape));
  }
  Shape out = shape;
  const Expr& d = shape[static_cast<size_t>(axis)];
  if (d.is_const()) {
    if (d.value() % parts != 0) fail("dist: dim ", axis, " of shape ", to_string(shape), " does not split into ", parts, " equal parts");
    out[static_cast<size_t>(axis)] = Expr(d.value() / parts);
  } else {
    if (known_factor(d) % parts != 0) fail("dist: dim ", axis, " of shape ", to_string(shape), " is not known to split into ", parts, " equal parts");
    out[static_cast<size_t>(axis)] = simplify(d / Expr(parts));
  }
  return out;
}

View view_from_layers(const Shape& base, const std::vector<ViewLayer>& layers) {
  if (layers.empty()) fail("dist: a view needs at least one layer");
  View v = layer_view(base, layers[0]);
  for (size_t k = 1; k < layers.size(); ++k) v = v.then(layer_view(layers[k - 1].shape, layers[k]));
  return v;
}

std::optional<SplitThrough> split_through(const View& view, int base_axis, int64_t parts) {
  if (parts < 1) fail("dist: cannot split into ", parts, " parts");
  if (base_axis < 0 || static_cast<size_t>(base_axis) >= view.base_shape().size()) return std::nullopt;
  SplitThrough out;
  Shape in = view.base_shape();
  int axis = base_axis;
  std::vector<ViewLayer> local;
  for (const ViewLayer& layer : view.layers()) {
    auto s = split_layer(in, axis, parts, layer, out.conditions);
    if (!s) return std::nullopt;
    local.push_back(s->local);
    in = layer.shape;
    axis = s->axis;
  }
  out.axis = axis;
  out.local = view_from_layers(split_shape(view.base_shape(), base_axis, parts), local);
  return out;
}

}  // namespace lumen::dist
