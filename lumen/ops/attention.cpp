#include "lumen/ops/attention.h"

#include <cmath>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/linalg.h"
#include "lumen/ops/reduce.h"

namespace lumen::ops {

Tensor repeat_heads(const Tensor& x, int64_t times) {
  if (times == 1) return x;
  size_t h = x.rank() - 3;
  Shape split = x.shape(), expanded = x.shape(), merged = x.shape();
  split.insert(split.begin() + static_cast<long>(h) + 1, Expr(1));
  expanded.insert(expanded.begin() + static_cast<long>(h) + 1, Expr(times));
  merged[h] = simplify(merged[h] * times);
  return x.reshape(split).expand(expanded).reshape(merged);
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const std::optional<Tensor>& attn_mask, bool is_causal,
                                    std::optional<double> scale, bool enable_gqa) {
  const char* op = "scaled_dot_product_attention";
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank()) {
    fail(op, ": q, k, v need the same rank >= 2; got ", to_string(q.shape()), ", ", to_string(k.shape()), ", ",
         to_string(v.shape()));
  }
  if (!is_float(q.dtype())) fail(op, ": needs float tensors, got ", dtype_name(q.dtype()));
  Tensor key = k, value = v;
  if (enable_gqa && q.rank() >= 3) {
    const Expr& hq = q.shape()[q.rank() - 3];
    const Expr& hk = k.shape()[k.rank() - 3];
    if (!hq.is_const() || !hk.is_const() || hk.value() == 0 || hq.value() % hk.value() != 0) {
      fail(op, ": with enable_gqa the query heads (", hq, ") must be a multiple of the key heads (", hk, ")");
    }
    key = repeat_heads(k, hq.value() / hk.value());
    value = repeat_heads(v, hq.value() / hk.value());
  }
  const Expr& e = q.shape().back();
  if (simplify(e) != simplify(key.shape().back())) {
    fail(op, ": q and k embedding dims differ: ", to_string(q.shape()), " vs ", to_string(k.shape()));
  }
  double s = scale ? *scale : (e.is_const() ? 1.0 / std::sqrt(static_cast<double>(e.value())) : 0.0);
  Tensor scores = matmul(q, key.transpose(-1, -2));
  if (scale || e.is_const()) {
    scores = scores * s;
  } else {
    scores = scores * q.graph()->iota(e, {}, DType::I32).cast(q.dtype()).sqrt().recip();
  }
  const Expr& l = q.shape()[q.rank() - 2];
  const Expr& sk = key.shape()[key.rank() - 2];
  if (is_causal) {
    Shape shape{l, sk};
    Tensor allowed = q.graph()->iota(le(loop_index(shape, 1), loop_index(shape, 0)), shape, DType::Bool);
    scores = scores + neg_inf_where(logical_not(allowed), scores.dtype());
  }
  if (attn_mask) {
    if (attn_mask->dtype() == DType::Bool) {
      scores = scores + neg_inf_where(logical_not(*attn_mask), scores.dtype());
    } else {
      scores = add(scores, attn_mask->cast(scores.dtype()));
    }
  }
  return matmul(softmax(scores, -1), value);
}

}  // namespace lumen::ops
