#include "lumen/ops/movement.h"

#include <algorithm>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/ops/elementwise.h"

namespace lumen::ops {

namespace {

int64_t static_dim(const Tensor& x, int dim, const char* op) {
  const Expr& d = x.shape()[static_cast<size_t>(dim)];
  if (!d.is_const()) fail(op, ": needs a static size for dim ", dim, " of shape ", to_string(x.shape()), ", got ", d);
  return d.value();
}

// Index of the source element along one dim for padded position j (reflect / replicate).
Expr padded_source(const Expr& j, int64_t before, int64_t n, bool reflect) {
  Expr s = j - before;
  if (reflect) return simplify(select(lt(s, Expr(0)), -s, select(lt(s, Expr(n)), s, Expr(2 * (n - 1)) - s)));
  return simplify(min(max(s, Expr(0)), Expr(n - 1)));
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) { return x.reshape(shape); }
Tensor permute(const Tensor& x, const std::vector<int>& dims) { return x.permute(dims); }
Tensor transpose(const Tensor& x, int a, int b) { return x.transpose(a, b); }
Tensor unsqueeze(const Tensor& x, int dim) { return x.unsqueeze(dim); }
Tensor broadcast_to(const Tensor& x, const Shape& shape) { return x.expand(shape); }

Tensor expand(const Tensor& x, const Shape& shape) {
  Shape s = shape;
  size_t lead = s.size() >= x.rank() ? s.size() - x.rank() : 0;
  for (size_t d = lead; d < s.size(); ++d) {
    if (s[d].is_const(-1)) s[d] = x.shape()[d - lead];
  }
  return x.expand(s);
}

Tensor squeeze(const Tensor& x, const std::vector<int>& dims) {
  std::vector<int> targets;
  if (dims.empty()) {
    for (size_t d = 0; d < x.rank(); ++d) targets.push_back(static_cast<int>(d));
  } else {
    for (int d : dims) targets.push_back(x.axis(d, "squeeze"));
  }
  Shape s;
  for (size_t d = 0; d < x.rank(); ++d) {
    bool drop = x.shape()[d].is_const(1) && std::find(targets.begin(), targets.end(), static_cast<int>(d)) != targets.end();
    if (!drop) s.push_back(x.shape()[d]);
  }
  return x.reshape(s);
}

Tensor flatten(const Tensor& x, int start, int end) {
  if (x.rank() == 0) return x.reshape({Expr(1)});
  int a = x.axis(start, "flatten"), b = x.axis(end, "flatten");
  if (a > b) fail("flatten: start dim ", start, " comes after end dim ", end, " for shape ", to_string(x.shape()));
  Shape s(x.shape().begin(), x.shape().begin() + a);
  Expr n = Expr(1);
  for (int d = a; d <= b; ++d) n = n * x.shape()[static_cast<size_t>(d)];
  s.push_back(simplify(n));
  s.insert(s.end(), x.shape().begin() + b + 1, x.shape().end());
  return x.reshape(s);
}

Tensor slice(const Tensor& x, int dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  int a = x.axis(dim, "slice");
  if (step <= 0) fail("slice: step must be positive, got ", step, " (use flip to reverse)");
  Expr n = x.shape()[static_cast<size_t>(a)];
  auto resolve = [&](std::optional<int64_t> v, Expr fallback) -> Expr {
    if (!v) return fallback;
    Expr e = *v < 0 ? simplify(n + *v) : Expr(*v);
    if (n.is_const()) e = Expr(std::clamp<int64_t>(e.value(), 0, n.value()));
    return e;
  };
  Expr b = resolve(start, Expr(0)), e = resolve(end, n);
  if (b.is_const() && e.is_const() && e.value() < b.value()) e = b;
  return x.slice(a, b, e, step);
}

Tensor narrow(const Tensor& x, int dim, int64_t start, int64_t length) {
  int a = x.axis(dim, "narrow");
  Expr n = x.shape()[static_cast<size_t>(a)];
  Expr b = start < 0 ? simplify(n + start) : Expr(start);
  return x.slice(a, b, simplify(b + length));
}

Tensor flip(const Tensor& x, const std::vector<int>& dims) {
  Tensor r = x;
  for (int d : dims) r = r.flip(d);
  return r;
}

Tensor pad_axis(const Tensor& x, int axis, int64_t before, int64_t after) {
  std::vector<std::pair<Expr, Expr>> padding(x.rank(), {Expr(0), Expr(0)});
  padding[static_cast<size_t>(axis < 0 ? axis + static_cast<int>(x.rank()) : axis)] = {Expr(before), Expr(after)};
  return x.pad(padding);
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode, double value) {
  if (pads.size() % 2 != 0 || pads.size() / 2 > x.rank()) {
    fail("pad: expects an even number of pad sizes, at most 2 per dim, for shape ", to_string(x.shape()), ", got ",
         pads.size());
  }
  size_t dims = pads.size() / 2;
  if (mode == "constant") {
    std::vector<std::pair<Expr, Expr>> padding(x.rank(), {Expr(0), Expr(0)});
    Tensor r = x;
    for (size_t k = 0; k < dims; ++k) {
      size_t d = x.rank() - 1 - k;
      int64_t before = pads[2 * k], after = pads[2 * k + 1];
      if (before < 0 || after < 0) {  // negative padding crops
        r = r.slice(static_cast<int>(d), Expr(before < 0 ? -before : 0),
                    simplify(r.shape()[d] - (after < 0 ? -after : 0)));
      }
      padding[d] = {Expr(std::max<int64_t>(before, 0)), Expr(std::max<int64_t>(after, 0))};
    }
    Tensor padded = r.pad(padding);
    if (value == 0) return padded;
    Tensor inside = scalar_like(r, 1, DType::Bool).expand(r.shape()).pad(padding);
    Tensor outside = logical_not(inside);
    return where(outside, scalar_like(r, value, r.dtype()), padded);
  }
  bool reflect = mode == "reflect";
  if (!reflect && mode != "replicate") fail("pad: unknown mode '", mode, "' (use constant, reflect or replicate)");
  Tensor r = x;
  for (size_t k = 0; k < dims; ++k) {
    int d = static_cast<int>(x.rank() - 1 - k);
    int64_t before = pads[2 * k], after = pads[2 * k + 1];
    if (before == 0 && after == 0) continue;
    int64_t n = static_dim(r, d, "pad");
    if (before < 0 || after < 0) fail("pad: ", mode, " padding must be non-negative, got ", before, ", ", after);
    if (reflect && (before >= n || after >= n)) {
      fail("pad: reflect padding (", before, ", ", after, ") must be smaller than dim ", d, " of shape ",
           to_string(x.shape()));
    }
    Shape s{Expr(n + before + after)};
    Tensor index = r.graph()->iota(padded_source(loop_index(s, 0), before, n, reflect), s, DType::I32);
    r = r.gather(index, d);
  }
  return r;
}

Tensor concat(const std::vector<Tensor>& tensors, int dim) {
  if (tensors.empty()) fail("concat: needs at least one tensor");
  DType dtype = tensors[0].dtype();
  for (const Tensor& t : tensors) dtype = promote_types(dtype, t.dtype());
  const Tensor& first = tensors[0];
  int a = first.axis(dim, "concat");
  Expr total = Expr(0);
  for (const Tensor& t : tensors) {
    if (t.rank() != first.rank()) {
      fail("concat: all tensors need the same rank; got ", to_string(first.shape()), " and ", to_string(t.shape()));
    }
    for (size_t d = 0; d < t.rank(); ++d) {
      if (static_cast<int>(d) != a && simplify(t.shape()[d]) != simplify(first.shape()[d])) {
        fail("concat: shapes ", to_string(first.shape()), " and ", to_string(t.shape()), " differ in dim ", d,
             " (only dim ", a, " may differ)");
      }
    }
    total = simplify(total + t.shape()[static_cast<size_t>(a)]);
  }
  if (tensors.size() == 1) return first.cast(dtype);
  Tensor result;
  Expr offset = Expr(0);
  for (const Tensor& t : tensors) {
    Expr n = t.shape()[static_cast<size_t>(a)];
    std::vector<std::pair<Expr, Expr>> padding(t.rank(), {Expr(0), Expr(0)});
    padding[static_cast<size_t>(a)] = {offset, simplify(total - offset - n)};
    Tensor placed = t.cast(dtype).pad(padding);  // padding reads 0; every position is covered once
    result = result.defined() ? result.add(placed) : placed;
    offset = simplify(offset + n);
  }
  return result;
}

Tensor stack(const std::vector<Tensor>& tensors, int dim) {
  if (tensors.empty()) fail("stack: needs at least one tensor");
  int r = static_cast<int>(tensors[0].rank());
  int a = dim < 0 ? dim + r + 1 : dim;
  std::vector<Tensor> expanded;
  for (const Tensor& t : tensors) {
    if (t.rank() != tensors[0].rank()) fail("stack: all tensors need the same shape");
    expanded.push_back(t.unsqueeze(a));
  }
  return concat(expanded, a);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int dim) {
  int a = x.axis(dim, "split");
  int64_t n = static_dim(x, a, "split");
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (total != n) fail("split: sizes add up to ", total, " but dim ", dim, " of shape ", to_string(x.shape()), " is ", n);
  std::vector<Tensor> parts;
  int64_t offset = 0;
  for (int64_t s : sizes) {
    parts.push_back(x.slice(a, offset, offset + s));
    offset += s;
  }
  return parts;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int dim) {
  if (split_size <= 0) fail("split: split_size must be positive, got ", split_size);
  int64_t n = static_dim(x, x.axis(dim, "split"), "split");
  std::vector<int64_t> sizes;
  for (int64_t offset = 0; offset < n; offset += split_size) sizes.push_back(std::min(split_size, n - offset));
  return split(x, sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int dim) {
  if (chunks <= 0) fail("chunk: chunks must be positive, got ", chunks);
  int64_t n = static_dim(x, x.axis(dim, "chunk"), "chunk");
  return split(x, std::max<int64_t>((n + chunks - 1) / chunks, 1), dim);
}

Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats) {
  if (repeats.size() < x.rank()) {
    fail("repeat: ", repeats.size(), " repeat counts given for shape ", to_string(x.shape()), " (need at least ",
         x.rank(), ")");
  }
  Shape padded(repeats.size() - x.rank(), Expr(1));
  padded.insert(padded.end(), x.shape().begin(), x.shape().end());
  Shape split_shape, expanded, merged;
  for (size_t d = 0; d < padded.size(); ++d) {
    if (repeats[d] < 0) fail("repeat: counts must be non-negative, got ", repeats[d]);
    split_shape.push_back(Expr(1));
    split_shape.push_back(padded[d]);
    expanded.push_back(Expr(repeats[d]));
    expanded.push_back(padded[d]);
    merged.push_back(simplify(padded[d] * repeats[d]));
  }
  return x.reshape(split_shape).expand(expanded).reshape(merged);
}

Tensor tile(const Tensor& x, const std::vector<int64_t>& repeats) {
  std::vector<int64_t> r = repeats;
  while (r.size() < x.rank()) r.insert(r.begin(), 1);
  return repeat(x, r);
}

Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int>& dims) {
  if (dims.empty()) {
    if (shifts.size() != 1) fail("roll: with no dims, give exactly one shift");
    Tensor flat = flatten(x);
    return roll(flat, shifts, {0}).reshape(x.shape());
  }
  if (shifts.size() != dims.size()) fail("roll: ", shifts.size(), " shifts for ", dims.size(), " dims");
  Tensor r = x;
  for (size_t k = 0; k < dims.size(); ++k) {
    int a = x.axis(dims[k], "roll");
    int64_t n = static_dim(r, a, "roll");
    if (n == 0) continue;
    int64_t s = ((shifts[k] % n) + n) % n;
    if (s == 0) continue;
    r = concat({r.slice(a, n - s, n), r.slice(a, 0, n - s)}, a);
  }
  return r;
}

}  // namespace lumen::ops
