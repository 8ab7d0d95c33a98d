#include "lumen/nn/rotary.h"

#include <cmath>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/math.h"
#include "lumen/ops/movement.h"

namespace lumen::nn {

RotaryTables rotary_tables(Graph& g, const Expr& seq, const Expr& offset, int64_t head_dim, double theta) {
  if (head_dim <= 0 || head_dim % 2 != 0) fail("rotary: head_dim must be positive and even, got ", head_dim);
  int64_t half = head_dim / 2;
  Shape freq_shape{Expr(1), Expr(half)};
  // inv_freq[i] = theta^(-2i/d) = exp2(i · (-2·log2(theta)/d))
  Tensor i = g.iota(loop_index(freq_shape, 1), freq_shape, DType::I32).cast(DType::F32);
  Tensor inv_freq = (i * (-2.0 * std::log2(theta) / static_cast<double>(head_dim))).exp2();
  Shape pos_shape{seq, Expr(1)};
  Tensor pos = g.iota(simplify(loop_index(pos_shape, 0) + offset), pos_shape, DType::I32).cast(DType::F32);
  Tensor angles = pos * inv_freq;  // [seq, half]
  Tensor full = ops::concat({angles, angles}, 1);
  return {ops::cos(full), ops::sin(full)};
}

Tensor apply_rotary(const Tensor& x, const RotaryTables& tables) {
  const Expr& d = x.shape().back();
  if (!d.is_const()) fail("rotary: head_dim must be static");
  int64_t half = d.value() / 2;
  int last = static_cast<int>(x.rank()) - 1;
  Tensor x1 = x.slice(last, 0, half), x2 = x.slice(last, half, d.value());
  Tensor rotated = ops::concat({ops::neg(x2), x1}, last);
  Tensor cos = tables.cos.cast(x.dtype()), sin = tables.sin.cast(x.dtype());
  return x * cos + rotated * sin;
}

}  // namespace lumen::nn
