#include "lumen/ops/elementwise.h"

#include <cmath>
#include <limits>

#include "lumen/core/error.h"
#include "lumen/core/layout.h"
#include "lumen/core/simplify.h"
#include "lumen/ops/math.h"
#include "lumen/ops/movement.h"

namespace lumen::ops {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int rank_of(DType d) {
  switch (d) {
    case DType::Bool: return 0;
    case DType::I8:
    case DType::U8:
    case DType::I32: return 1;
    case DType::I64: return 2;
    case DType::F16:
    case DType::BF16: return 3;
    case DType::F32: return 4;
    case DType::F64: return 5;
  }
  return 4;
}

Tensor as_bool(const Tensor& x) { return x.dtype() == DType::Bool ? x : x.cast(DType::Bool); }

Tensor to_float(const Tensor& x) { return is_float(x.dtype()) ? x : x.cast(DType::F32); }

// NaN where `mask` is true, 0 elsewhere: log2(1 - m) * 0 is 0 * 0 or -inf * 0.
Tensor nan_where(const Tensor& mask, DType dtype) {
  Tensor m = mask.cast(dtype);
  return (1.0 - m).log2() * 0.0;
}

// x is not NaN: x < inf or -inf < x (both comparisons are false only for NaN).
Tensor not_nan(const Tensor& x) {
  return logical_or(x.less_than(scalar_like(x, kInf, x.dtype())), scalar_like(x, -kInf, x.dtype()).less_than(x));
}

}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16)) return DType::F32;
  DType d = rank_of(a) >= rank_of(b) ? a : b;
  return is_storage_only(d) ? DType::I32 : d;  // 8-bit integers compute in i32
}

std::pair<Tensor, Tensor> promote(const Tensor& a, const Tensor& b) {
  DType d = promote_types(a.dtype(), b.dtype());
  return {a.cast(d), b.cast(d)};
}

Tensor scalar_like(const Tensor& like, double value, DType dtype) { return like.graph()->constant(value, dtype); }

Tensor neg_inf_where(const Tensor& mask, DType dtype) { return (1.0 - mask.cast(dtype)).log2(); }

Tensor stack2(const Tensor& a, const Tensor& b) {
  auto [x, y] = broadcast(a, b, "stack");
  // Padding reads as 0, and x + 0 == x exactly (bool: x or false).
  return pad_axis(x.unsqueeze(0), 0, 0, 1).add(pad_axis(y.unsqueeze(0), 0, 1, 0));
}

// ---- arithmetic -----------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  return x.add(y);
}

Tensor sub(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  if (x.dtype() == DType::Bool) fail("sub: subtracting bool tensors is not defined (use logical_xor)");
  return x.add(neg(y));
}

Tensor mul(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  return x.mul(y);
}

namespace {

// Whether t is a single float constant whose reciprocal is a normal float
// (then x * (1/y) needs no rescaling).
bool has_normal_reciprocal(const Tensor& t) {
  const Node& n = t.graph()->node(t.node_id());
  if (n.op != Op::Constant || n.pattern.defined()) return false;
  double v = std::fabs(n.number);
  return v == 0 || !std::isfinite(v) || (v >= 0x1p-126 && v <= 0x1p126);
}

}  // namespace

// x / y as x * (1/y). For f32, a subnormal y would give 1/y = inf and a y
// above 2^126 a subnormal 1/y short of bits, so both operands are first
// scaled by a power of two (exact) that brings y into the normal range:
// 2^24 when |y| < 2^-126, 2^-24 when |y| > 2^126. Whenever x·s overflows or
// underflows, the quotient does too.
Tensor div(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(to_float(a), to_float(b));
  if (x.dtype() != DType::F32 || has_normal_reciprocal(y)) return x.mul(y.recip());
  // |y| < 2^-126 and |y| > 2^126 as comparisons of y itself: abs(y) is a
  // max over y and -y, and reading y through that second view would give a
  // broadcast divisor (a row sum) a buffer of its own instead of being fused.
  auto below = [](const Tensor& a, double b) { return a.less_than(scalar_like(a, b, DType::F32)).cast(DType::F32); };
  auto above = [](const Tensor& a, double b) { return scalar_like(a, b, DType::F32).less_than(a).cast(DType::F32); };
  Tensor tiny = below(y, 0x1p-126).mul(above(y, -0x1p-126));
  Tensor huge = above(y, 0x1p126).add(below(y, -0x1p126));
  // 1 + tiny·(2^24 - 1) + huge·(2^-24 - 1): every sum here is exact.
  Tensor scale = tiny.mul(scalar_like(y, 0x1p24 - 1, DType::F32))
                     .add(huge.mul(scalar_like(y, 0x1p-24 - 1, DType::F32)))
                     .add(scalar_like(y, 1, DType::F32));
  return x.mul(scale).mul(y.mul(scale).recip());
}

Tensor fmod(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  return x.mod(y);
}

// As PyTorch: r = fmod(x, y), plus y where r is nonzero and its sign differs
// from y's. So remainder(1, inf) = 1, remainder(-1, inf) = inf, and a zero r
// keeps its sign (remainder(-0, 1) = -0).
Tensor remainder(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  Tensor r = x.mod(y);
  Tensor zero = scalar_like(r, 0, r.dtype());
  Tensor nonzero = ne(r, zero);
  Tensor signs_differ = logical_xor(r.less_than(zero), y.less_than(zero));
  Tensor fix = logical_and(nonzero, signs_differ);
  if (!is_float(r.dtype())) return r.add(y.mul(fix.cast(r.dtype())));
  // A select, not r + y·fix: y = ±inf with fix = 0 would give inf·0 = NaN.
  return where(fix, r.add(y), r);
}

// m / y for i64 where m is an exact multiple of y: a double estimate, then
// one exact correction (the residual m - q0·y is small and computed in i64),
// so quotients past 2^53 stay exact.
Tensor exact_quotient_i64(const Tensor& m, const Tensor& y) {
  Tensor yf = y.cast(DType::F64);
  Tensor q0 = trunc(div(m.cast(DType::F64), yf)).cast(DType::I64);
  Tensor residual = m.add(neg(q0.mul(y)));
  return q0.add(round(div(residual.cast(DType::F64), yf)).cast(DType::I64));
}

Tensor floor_divide(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  DType dtype = x.dtype();
  if (dtype == DType::I64) return exact_quotient_i64(x.add(neg(remainder(x, y))), y);
  Tensor xf = to_float(x), yf = to_float(y);
  Tensor r = xf.mod(yf);
  // (x - r) is an exact multiple of y; divide and round to that integer.
  Tensor q = div(xf - r, yf);
  Tensor zero = scalar_like(r, 0, r.dtype());
  Tensor adjust = logical_and(ne(r, zero), logical_xor(r.less_than(zero), yf.less_than(zero))).cast(r.dtype());
  Tensor fq = floor(q);
  Tensor rounded = fq + gt(q - fq, scalar_like(q, 0.5, q.dtype())).cast(q.dtype());
  Tensor result = rounded - adjust;
  return result.cast(dtype);
}

Tensor neg(const Tensor& x) {
  if (x.dtype() == DType::Bool) fail("neg: negating a bool tensor is not defined (use logical_not)");
  return x.mul(scalar_like(x, -1, x.dtype()));
}

namespace {

// A max over a stacked pair reads its operands through padded views, so it does not follow their
// memory order by itself (core/layout.h): `f` (maximum, minimum) is built in it here.
std::optional<Tensor> pair_in_memory_order(const Tensor& a, const Tensor& b, Tensor (*f)(const Tensor&, const Tensor&),
                                           const char* name) {
  auto [x, y] = broadcast(a, b, name);
  return in_memory_order({x, y}, [f](const std::vector<Tensor>& in) { return f(in[0], in[1]); });
}

}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  if (auto r = pair_in_memory_order(x, y, maximum, "maximum")) return *r;
  return stack2(x, y).max_reduce(0);
}

Tensor minimum(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  if (auto r = pair_in_memory_order(x, y, minimum, "minimum")) return *r;
  if (x.dtype() == DType::Bool) return x.mul(y).expand(broadcast_shapes(x.shape(), y.shape(), "minimum"));
  if (x.dtype() == DType::I32 || x.dtype() == DType::I64) {  // min(a, b) = ~max(~a, ~b), with ~v = -v - 1 (wraps, so exact)
    auto complement = [](const Tensor& v) { return neg(v).add(scalar_like(v, -1, v.dtype())); };
    return complement(stack2(complement(x), complement(y)).max_reduce(0));
  }
  return neg(stack2(neg(x), neg(y)).max_reduce(0));
}

Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  Tensor r = x;
  if (lo) r = maximum(r, scalar_like(x, *lo, is_float(x.dtype()) || std::floor(*lo) == *lo ? x.dtype() : DType::F32));
  if (hi) r = minimum(r, scalar_like(x, *hi, is_float(x.dtype()) || std::floor(*hi) == *hi ? x.dtype() : DType::F32));
  return r;
}

Tensor abs(const Tensor& x) {
  if (x.dtype() == DType::Bool) return x;
  return maximum(x, neg(x));
}

Tensor sign(const Tensor& x) {
  if (x.dtype() == DType::Bool) return x;
  Tensor zero = scalar_like(x, 0, x.dtype());
  // (0 < x) - (x < 0): sign(NaN) is 0, as in PyTorch.
  return zero.less_than(x).cast(x.dtype()).add(neg(x.less_than(zero).cast(x.dtype())));
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  Shape shape = broadcast_shapes(broadcast_shapes(condition.shape(), x.shape(), "where"), y.shape(), "where");
  Graph* g = x.graph();
  Expr n = shape_numel(shape);
  // Select by gathering from [b..., a...]: exact for every value, inf and NaN
  // included (blending c*a + (1-c)*b would turn inf*0 into NaN). The index is
  // position + c·n, which lowering turns into a select of the two reads
  // (kernel/two_place_gather.h): no data-dependent read remains.
  Tensor table = stack2(y.expand(shape), x.expand(shape)).reshape({simplify(n * 2)});
  Expr flat = Expr(0);
  std::vector<Expr> idx = loop_indices(shape);
  std::vector<Expr> strides = contiguous_strides(shape);
  for (size_t d = 0; d < shape.size(); ++d) flat = flat + idx[d] * strides[d];
  Tensor position = g->iota(simplify(flat), shape, DType::I32);
  Tensor offset = as_bool(condition).expand(shape).cast(DType::I32).mul(g->iota(n, {}, DType::I32).expand(shape));
  return table.gather(position.add(offset), 0);
}

Tensor pow(const Tensor& a, double e) {
  Tensor x = a;
  if (!is_float(x.dtype()) && std::floor(e) != e) x = x.cast(DType::F32);
  if (e == 0) return scalar_like(x, 1, x.dtype()).expand(x.shape());
  if (e == 1) return x;
  if (e == 0.5 && is_float(x.dtype())) return x.sqrt();
  if (e == -0.5 && is_float(x.dtype())) return x.sqrt().recip();
  if (std::floor(e) == e && std::fabs(e) <= 16) {  // repeated squaring: exact like torch for small powers
    auto n = static_cast<int64_t>(std::fabs(e));
    Tensor result, base = x;
    while (n > 0) {
      if (n & 1) result = result.defined() ? result.mul(base) : base;
      n >>= 1;
      if (n > 0) base = base.mul(base);
    }
    return e < 0 ? to_float(result).recip() : result;
  }
  return pow(x, scalar_like(x, e, is_float(x.dtype()) ? x.dtype() : DType::F32));
}

Tensor pow(const Tensor& a, const Tensor& b) {
  auto [x0, y0] = promote(a, b);
  DType dtype = x0.dtype();
  Tensor x = to_float(x0), y = to_float(y0);
  Tensor zero = scalar_like(x, 0, x.dtype());
  Tensor magnitude = y.mul(abs(x).log2()).exp2();
  Tensor integral = eq(y.mod(scalar_like(y, 1, y.dtype())), zero);
  Tensor odd = ne(y.mod(scalar_like(y, 2, y.dtype())), zero);
  Tensor negative = x.less_than(zero);
  Tensor flip = logical_and(negative, odd).cast(x.dtype());
  Tensor signed_mag = magnitude.mul(1.0 - flip * 2.0);
  Tensor result = signed_mag + nan_where(logical_and(negative, logical_not(integral)), x.dtype());
  result = where(eq(y, zero), scalar_like(x, 1, x.dtype()), result);  // x^0 = 1, even for NaN and 0
  if (!is_float(dtype)) result = floor(result + 0.5).cast(dtype);
  return result;
}

// ---- comparison and logic ----------------------------------------------------

Tensor lt(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  return x.less_than(y);
}

Tensor gt(const Tensor& a, const Tensor& b) { return lt(b, a); }

Tensor eq(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  Tensor same = logical_not(logical_or(x.less_than(y), y.less_than(x)));
  if (!is_float(x.dtype())) return same;
  return logical_and(same, logical_and(not_nan(x), not_nan(y)));
}

Tensor ne(const Tensor& a, const Tensor& b) { return logical_not(eq(a, b)); }

Tensor le(const Tensor& a, const Tensor& b) { return logical_or(lt(a, b), eq(a, b)); }

Tensor ge(const Tensor& a, const Tensor& b) { return le(b, a); }

Tensor logical_and(const Tensor& a, const Tensor& b) { return as_bool(a).mul(as_bool(b)); }

Tensor logical_or(const Tensor& a, const Tensor& b) { return as_bool(a).add(as_bool(b)); }

Tensor logical_xor(const Tensor& a, const Tensor& b) {
  Tensor x = as_bool(a), y = as_bool(b);
  return x.less_than(y).add(y.less_than(x));
}

Tensor logical_not(const Tensor& x) {
  Tensor b = as_bool(x);
  return b.less_than(scalar_like(b, 1, DType::Bool));  // false < true, true < true is false
}

Tensor isnan(const Tensor& x) {
  if (!is_float(x.dtype())) return scalar_like(x, 0, DType::Bool).expand(x.shape());
  return logical_not(not_nan(x));
}

Tensor isinf(const Tensor& x) {
  if (!is_float(x.dtype())) return scalar_like(x, 0, DType::Bool).expand(x.shape());
  Tensor pos = logical_not(x.less_than(scalar_like(x, kInf, x.dtype())));
  Tensor neg_inf = logical_not(scalar_like(x, -kInf, x.dtype()).less_than(x));
  return logical_and(logical_or(pos, neg_inf), not_nan(x));
}

Tensor isfinite(const Tensor& x) {
  if (!is_float(x.dtype())) return scalar_like(x, 1, DType::Bool).expand(x.shape());
  return logical_and(x.less_than(scalar_like(x, kInf, x.dtype())), scalar_like(x, -kInf, x.dtype()).less_than(x));
}

}  // namespace lumen::ops
