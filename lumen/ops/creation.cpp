#include "lumen/ops/creation.h"

#include <cmath>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/math.h"

namespace lumen::ops {

namespace {

constexpr int64_t kPrime = 2147483647;  // 2^31 - 1

// A per-element pseudo-random integer in [0, 2^31 - 1) from the flat index:
// rounds of x -> (x² + c) mod p keep every product below 2^62.
Expr hash_index(const Shape& shape, uint64_t seed, int64_t stream) {
  std::vector<Expr> idx = loop_indices(shape);
  std::vector<Expr> strides = contiguous_strides(shape);
  Expr flat = Expr(0);
  for (size_t d = 0; d < shape.size(); ++d) flat = flat + idx[d] * strides[d];
  auto s = static_cast<int64_t>(seed % static_cast<uint64_t>(kPrime));
  Expr x = (flat * 2 + stream + s * 7919 + 12345) % kPrime;
  for (int64_t round : {40503, 65599, 2654435, 97, 31337}) x = (x * x + round + s) % kPrime;
  return simplify(x);
}

Tensor uniform_stream(Graph& g, const Shape& shape, uint64_t seed, int64_t stream) {
  Tensor bits = g.iota(hash_index(shape, seed, stream), shape, DType::I32);
  // 24 random bits, so every value is exact in f32 and strictly below 1.
  Tensor high = bits.mod(g.constant(16777216, DType::I32));
  return high.cast(DType::F32) * (1.0 / 16777216.0);
}

}  // namespace

Tensor full(Graph& g, const Shape& shape, double value, DType dtype) { return g.constant(value, dtype).expand(shape); }
Tensor full_int(Graph& g, const Shape& shape, int64_t value, DType dtype) {
  return g.constant_int(value, dtype).expand(shape);
}
Tensor zeros(Graph& g, const Shape& shape, DType dtype) { return full(g, shape, 0, dtype); }
Tensor ones(Graph& g, const Shape& shape, DType dtype) { return full(g, shape, 1, dtype); }
Tensor full_like(const Tensor& x, double value) { return full(*x.graph(), x.shape(), value, x.dtype()); }
Tensor zeros_like(const Tensor& x) { return full_like(x, 0); }
Tensor ones_like(const Tensor& x) { return full_like(x, 1); }

Tensor arange(Graph& g, double start, double end, double step, DType dtype) {
  if (step == 0) fail("arange: step must not be 0");
  double count = std::ceil((end - start) / step);
  if (!(count >= 0) || count > 2147483647.0) {
    fail("arange: range [", start, ", ", end, ") with step ", step, " gives ", count, " elements");
  }
  Shape s{Expr(static_cast<int64_t>(count))};
  Tensor i = g.iota(loop_index(s, 0), s, DType::I32);
  bool integral = std::floor(start) == start && std::floor(step) == step;
  if (dtype == DType::I64 && integral) {  // exact past 2^31
    return i.cast(DType::I64) * g.constant_int(saturate_to_i64(step)) + g.constant_int(saturate_to_i64(start));
  }
  if (!is_float(dtype) && integral) {
    double last = start + step * (count - 1);
    if (std::fmax(std::fabs(start), std::fabs(last)) > 2147483647.0) {
      fail("arange: values from ", start, " to ", last, " do not fit ", dtype_name(dtype), " (use dtype i64)");
    }
    return (i * g.constant(step, DType::I32) + g.constant(start, DType::I32)).cast(dtype);
  }
  DType compute = dtype == DType::F64 || dtype == DType::I64 ? DType::F64 : DType::F32;
  return (i.cast(compute) * g.constant(step, compute) + g.constant(start, compute)).cast(dtype);
}

Tensor linspace(Graph& g, double start, double end, int64_t steps, DType dtype) {
  if (steps < 0) fail("linspace: steps must be non-negative, got ", steps);
  if (steps == 1) return full(g, {Expr(1)}, start, dtype);
  Shape s{Expr(steps)};
  double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0;
  Tensor i = g.iota(loop_index(s, 0), s, DType::I32).cast(DType::F32);
  // Like torch: the first half counts up from start, the second down from end.
  Tensor up = i * step + start;
  Tensor down = (i - static_cast<double>(steps - 1)) * step + end;
  Tensor first_half = i.less_than(g.constant(static_cast<double>(steps / 2), DType::F32));
  return select_finite(first_half, up, down).cast(dtype);
}

Tensor eye(Graph& g, int64_t n, int64_t m, DType dtype) {
  if (m < 0) m = n;
  if (n < 0) fail("eye: n must be non-negative, got ", n);
  Shape s{Expr(n), Expr(m)};
  return g.iota(eq(loop_index(s, 0), loop_index(s, 1)), s, dtype);
}

Tensor tril(const Tensor& x, int64_t diagonal) {
  if (x.rank() < 2) fail("tril: needs at least 2 dims, got ", to_string(x.shape()));
  Shape s{x.shape()[x.rank() - 2], x.shape()[x.rank() - 1]};
  Tensor keep = x.graph()->iota(le(loop_index(s, 1) - loop_index(s, 0), Expr(diagonal)), s, DType::Bool);
  return where(keep, x, scalar_like(x, 0, x.dtype()));
}

Tensor triu(const Tensor& x, int64_t diagonal) {
  if (x.rank() < 2) fail("triu: needs at least 2 dims, got ", to_string(x.shape()));
  Shape s{x.shape()[x.rank() - 2], x.shape()[x.rank() - 1]};
  Tensor keep = x.graph()->iota(ge(loop_index(s, 1) - loop_index(s, 0), Expr(diagonal)), s, DType::Bool);
  return where(keep, x, scalar_like(x, 0, x.dtype()));
}

Tensor rand(Graph& g, const Shape& shape, uint64_t seed, DType dtype) {
  return uniform_stream(g, shape, seed, 0).cast(dtype);
}

Tensor randn(Graph& g, const Shape& shape, uint64_t seed, DType dtype) {
  // Box-Muller: u1 in (0, 1] keeps the log finite.
  Tensor u1 = 1.0 - uniform_stream(g, shape, seed, 0);
  Tensor u2 = uniform_stream(g, shape, seed, 1);
  Tensor radius = (log(u1) * -2.0).sqrt();
  return (radius * cos(u2 * 6.283185307179586)).cast(dtype);
}

}  // namespace lumen::ops
