// Spatial transformers: AffineGrid (a sampling grid from affine matrices) and
// GridSample (X read at the grid's normalized coordinates; nearest, linear or
// cubic taps per spatial dim; zeros, border or reflection padding), 2-D and
// 3-D. GridSample gathers X flattened over its spatial dims once per tap
// combination, with per-element indices and weights computed in f32.
#include <cmath>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

// Normalized coordinates of `len` positions: [-1, 1] at the corners (align_corners) or the centres.
std::vector<double> base_coordinates(int64_t len, bool align_corners) {
  std::vector<double> out;
  for (int64_t i = 0; i < len; ++i) {
    double v = align_corners ? (len > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(len - 1) : -1.0)
                             : (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(len) - 1.0;
    out.push_back(v);
  }
  return out;
}

// theta [N, D, D + 1] and size (N, C, spatial...): grid [N, spatial..., D] = theta . (x, y[, z], 1).
std::vector<Value> affine_grid(NodeContext& n) {
  bool align = n.attr_int("align_corners", 0) != 0;
  Tensor theta = n.in(0).cast(DType::F32);
  std::vector<int64_t> size = n.ints(1);
  if (size.size() != 4 && size.size() != 5) fail("onnx: ", n.where(), ": size must have 4 or 5 entries");
  std::vector<int64_t> spatial(size.begin() + 2, size.end());
  size_t d = spatial.size();
  int64_t points = 1;
  for (int64_t s : spatial) points *= s;
  // homogeneous base grid [points, D + 1]: x varies fastest (the last spatial dim)
  std::vector<double> base;
  std::vector<std::vector<double>> axis(d);
  for (size_t k = 0; k < d; ++k) axis[k] = base_coordinates(spatial[k], align);
  for (int64_t p = 0; p < points; ++p) {
    int64_t rest = p;
    std::vector<double> coord(d);
    for (size_t k = d; k-- > 0;) {
      coord[k] = axis[k][static_cast<size_t>(rest % spatial[k])];
      rest /= spatial[k];
    }
    for (size_t k = d; k-- > 0;) base.push_back(coord[k]);  // x (last dim) first
    base.push_back(1.0);
  }
  Value bv = Value::of_reals(base, {points, static_cast<int64_t>(d + 1)}, kFloat);
  Tensor grid = n.importer().tensor(bv, n.where() + " base grid");
  Tensor out = ops::matmul(grid, theta.transpose(1, 2));  // [N, points, D]
  Shape s{theta.shape()[0]};
  for (int64_t v : spatial) s.push_back(Expr(v));
  s.push_back(Expr(static_cast<int64_t>(d)));
  return {Value::of(out.reshape(s).cast(n.in(0).dtype()), n.onnx_type(0))};
}

struct Sampling {
  std::string mode, padding;
  bool align = false;
};

// Reflects v into [lo, hi] by the near border, repeatedly (as the reference).
Tensor reflect(const Tensor& v, double lo, double hi) {
  double range = hi - lo;
  // dx past the border `from` (sign +1: below lo, -1: above hi): an even count of
  // whole ranges leaves r measured from that border, an odd one from the other.
  auto fold = [&](const Tensor& dx, double from, double other, double sign) {
    Tensor count = ops::trunc(dx * (1.0 / range));
    Tensor r = ops::sub(dx, count * range);
    Tensor even = ops::eq(ops::fmod(count, count.scalar(2)), count.scalar(0));
    return ops::where(even, ops::add(r * sign, r.scalar(from)), ops::add(r * -sign, r.scalar(other)));
  };
  Tensor below = fold(ops::sub(v.scalar(lo), v), lo, hi, 1.0);
  Tensor above = fold(ops::sub(v, v.scalar(hi)), hi, lo, -1.0);
  Tensor lo_neg = ops::where(ops::lt(v, v.scalar(lo)), below, v);
  return ops::where(ops::gt(v, v.scalar(hi)), above, lo_neg);
}

// One tap along one spatial dim: a clamped integer index and a weight (0 where zeros padding reads outside).
struct Tap {
  Tensor index, weight;
};

Tap pixel(const Tensor& i, Tensor weight, int64_t len, const Sampling& s) {
  double lo = s.align ? 0.0 : -0.5, hi = s.align ? static_cast<double>(len - 1) : static_cast<double>(len) - 0.5;
  Tensor idx = i;
  if (s.padding == "zeros") {
    Tensor inside = ops::logical_and(ops::ge(i, i.scalar(0)), ops::lt(i, i.scalar(static_cast<double>(len))));
    weight = ops::mul(weight, inside.cast(weight.dtype()));
  } else if (s.padding == "reflection") {
    idx = ops::trunc(reflect(i, lo, hi));
  }
  idx = ops::clamp(idx, 0.0, static_cast<double>(len - 1));
  return {idx.cast(DType::I64), weight};
}

// The taps of one spatial dim for source coordinates x.
std::vector<Tap> axis_taps(const Tensor& coord, int64_t len, const Sampling& s) {
  double lo = s.align ? 0.0 : -0.5, hi = s.align ? static_cast<double>(len - 1) : static_cast<double>(len) - 0.5;
  Tensor x = s.mode == "nearest" ? ops::round(coord) : coord;
  Tensor outside = ops::logical_or(ops::lt(x, x.scalar(lo)), ops::gt(x, x.scalar(hi)));
  if (s.padding == "border") x = ops::where(outside, ops::clamp(x, 0.0, static_cast<double>(len - 1)), x);
  if (s.padding == "reflection") x = ops::where(outside, reflect(x, lo, hi), x);
  Tensor one = ops::ones_like(x);
  if (s.mode == "nearest") return {pixel(ops::trunc(x), one, len, s)};
  Tensor x0 = ops::floor(x);
  Tensor t = ops::sub(x, x0);
  if (s.mode == "linear") return {pixel(x0, ops::sub(one, t), len, s), pixel(x0 + 1.0, t, len, s)};
  const double a = -0.75;  // cubic convolution (Keys), as the reference
  auto near = [&](const Tensor& d) { return ops::add(ops::mul(ops::mul(ops::sub(d * (a + 2), d.scalar(a + 3)), d), d), d.scalar(1)); };
  auto far = [&](const Tensor& d) {
    return ops::sub(ops::mul(ops::add(ops::mul(ops::sub(d * a, d.scalar(5 * a)), d), d.scalar(8 * a)), d), d.scalar(4 * a));
  };
  Tensor u = ops::sub(one, t);
  return {pixel(x0 - 1.0, far(t + 1.0), len, s), pixel(x0, near(t), len, s), pixel(x0 + 1.0, near(u), len, s),
          pixel(x0 + 2.0, far(u + 1.0), len, s)};
}

std::vector<Value> grid_sample(NodeContext& n) {
  Sampling s{n.attr_string("mode", "linear"), n.attr_string("padding_mode", "zeros"), n.attr_int("align_corners", 0) != 0};
  if (s.mode == "bilinear") s.mode = "linear";
  if (s.mode == "bicubic") s.mode = "cubic";
  if (s.mode != "nearest" && s.mode != "linear" && s.mode != "cubic") n.unsupported_attribute("mode", "'" + s.mode + "'");
  if (s.padding != "zeros" && s.padding != "border" && s.padding != "reflection") n.unsupported_attribute("padding_mode", "'" + s.padding + "'");
  Tensor x = n.in(0), grid = n.in(1).cast(DType::F32);
  size_t d = x.rank() - 2;
  if (x.rank() < 3 || grid.rank() != x.rank() || !grid.shape().back().is_const(static_cast<int64_t>(d))) {
    fail("onnx: ", n.where(), ": X ", to_string(x.shape()), " and grid ", to_string(grid.shape()), " do not fit");
  }
  std::vector<int64_t> len;
  for (size_t k = 0; k < d; ++k) {
    if (!x.shape()[2 + k].is_const()) n.unsupported("GridSample over dynamic spatial dims");
    len.push_back(x.shape()[2 + k].value());
  }
  // Per spatial dim k (X's order), its taps; the grid's last axis lists them reversed (x first).
  std::vector<std::vector<Tap>> taps(d);
  for (size_t k = 0; k < d; ++k) {
    int64_t c = static_cast<int64_t>(d - 1 - k);
    Tensor g = grid.slice(static_cast<int>(grid.rank()) - 1, Expr(c), Expr(c + 1)).squeeze(static_cast<int>(grid.rank()) - 1);
    double l = static_cast<double>(len[k]);
    Tensor coord = s.align ? ops::add(g, g.scalar(1)) * ((l - 1) / 2) : ops::sub(ops::add(g, g.scalar(1)) * l, g.scalar(1)) * 0.5;
    taps[k] = axis_taps(coord, len[k], s);
  }
  Shape gs = grid.shape();  // [N, out..., D]
  Expr points(1);
  for (size_t k = 1; k + 1 < gs.size(); ++k) points = points * gs[k];
  points = simplify(points);
  Shape xs = x.shape();
  Expr spatial(1);
  for (size_t k = 0; k < d; ++k) spatial = spatial * Expr(len[k]);
  Tensor flat = x.reshape({xs[0], xs[1], simplify(spatial)});
  std::optional<Tensor> sum;
  std::vector<size_t> pick(d, 0);
  while (true) {  // every combination of one tap per dim
    Tensor index = taps[0][pick[0]].index, weight = taps[0][pick[0]].weight;
    for (size_t k = 1; k < d; ++k) {
      index = ops::add(index * static_cast<double>(len[k]), taps[k][pick[k]].index);
      weight = ops::mul(weight, taps[k][pick[k]].weight);
    }
    Tensor idx = index.reshape({gs[0], Expr(1), points}).expand({gs[0], xs[1], points});
    Tensor term = ops::mul(ops::gather(flat, 2, idx).cast(DType::F32), weight.reshape({gs[0], Expr(1), points}));
    sum = sum ? ops::add(*sum, term) : term;
    size_t k = d;
    while (k-- > 0 && ++pick[k] == taps[k].size()) pick[k] = 0;
    if (k == static_cast<size_t>(-1)) break;
  }
  Shape out{xs[0], xs[1]};
  for (size_t k = 1; k + 1 < gs.size(); ++k) out.push_back(gs[k]);
  return {Value::of(sum->reshape(out).cast(x.dtype()), n.onnx_type(0))};
}

}  // namespace

void add_grid_ops(OpTable& t) {
  t["AffineGrid"] = affine_grid;
  t["GridSample"] = grid_sample;
}

}  // namespace lumen::onnx
