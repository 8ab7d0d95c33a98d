// The Attention op (opset 23+): scaled dot-product attention over 4-D
// [batch, heads, seq, head_size] or 3-D [batch, seq, heads * head_size]
// inputs, with past key/value, grouped-query heads, a bool or additive mask,
// causal and sliding-window masks, per-batch key lengths and soft capping —
// all composed from lumen's matmul, softmax and masks.
#include <cmath>

#include "lumen/core/error.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

// 3-D [B, S, H * D] -> 4-D [B, H, S, D].
Tensor to_heads(NodeContext& n, const Tensor& x, int64_t heads, const char* what) {
  if (x.rank() == 4) return x;
  if (x.rank() != 3 || heads <= 0) {
    fail("onnx: ", n.where(), ": ", what, " ", to_string(x.shape()), " must be 4-D, or 3-D with q_num_heads / kv_num_heads");
  }
  Shape s = x.shape();
  return x.reshape({s[0], s[1], Expr(heads), Expr(-1)}).permute({0, 2, 1, 3});
}

Tensor with_past(NodeContext& n, const Tensor& x, size_t past) {
  if (!n.has(past)) return x;
  return ops::concat({n.in(past), x}, 2);
}

// Positions a query may not attend to (causal, windows, key lengths), or nothing.
// Causal and window masks are bottom-right aligned: query i sits at absolute
// position i + offset, with offset the cached keys before this call (past) or,
// for an external cache (nonpad_kv_seqlen without past), per batch
// nonpad_kv_seqlen[b] - q_len.
std::optional<Tensor> disallowed(NodeContext& n, const Shape& scores_shape, int64_t past) {
  bool causal = n.attr_int("is_causal", 0) != 0;
  int64_t left = n.attr_int("left_window_size", -1), right = n.attr_int("right_window_size", -1);
  Graph& g = n.graph();
  const Shape& s = scores_shape;
  std::optional<Tensor> out;
  auto add = [&](const Tensor& bad) { out = out ? ops::logical_or(*out, bad) : bad; };
  std::optional<Tensor> lengths;  // nonpad_kv_seqlen [B] as [B, 1, 1, 1]
  if (n.has(6)) lengths = n.in(6).cast(DType::I64).reshape({s[0], Expr(1), Expr(1), Expr(1)});
  bool windowed = causal || left >= 0 || right >= 0;
  if (windowed && lengths && !n.has(4)) {
    // diff = (i + offset[b]) - j: causal allows diff >= 0, windows -right <= diff <= left.
    Tensor diff = ops::add(g.iota(loop_index(s, 2) - loop_index(s, 3) - s[2], s, DType::I64), *lengths);
    if (causal) add(ops::lt(diff, diff.scalar(0)));
    if (left >= 0) add(ops::gt(diff, diff.scalar(static_cast<double>(left))));
    if (right >= 0) add(ops::lt(diff, diff.scalar(static_cast<double>(-right))));
  } else {
    Expr q = loop_index(s, 2) + Expr(past);
    Expr k = loop_index(s, 3);
    Expr bad(0);
    if (causal) bad = logical_or(bad, gt(k, q));
    if (left >= 0) bad = logical_or(bad, lt(k, q - Expr(left)));
    if (right >= 0) bad = logical_or(bad, gt(k, q + Expr(right)));
    if (!bad.is_const(0)) add(g.iota(bad, s, DType::Bool));
  }
  if (lengths) add(ops::ge(g.iota(loop_index(s, 3), s, DType::I64), *lengths));  // keys at or past the length are padding
  return out;
}

std::vector<Value> attention(NodeContext& n) {
  int64_t q_heads = n.attr_int("q_num_heads", 0), kv_heads = n.attr_int("kv_num_heads", 0);
  n.attr_int("softmax_precision", 0);
  int64_t mode = n.attr_int("qk_matmul_output_mode", 0);
  double softcap = n.attr_float("softcap", 0.0);
  Tensor q_in = n.in(0);
  bool three_d = q_in.rank() == 3;
  Tensor q = to_heads(n, q_in, q_heads, "Q");
  Tensor k = with_past(n, to_heads(n, n.in(1), kv_heads, "K"), 4);
  Tensor v = with_past(n, to_heads(n, n.in(2), kv_heads, "V"), 5);
  const Expr& head_size = q.shape()[3];
  const Expr& hq = q.shape()[1];
  const Expr& hk = k.shape()[1];
  if (!head_size.is_const() || !hq.is_const() || !hk.is_const() || hq.value() % hk.value() != 0) {
    fail("onnx: ", n.where(), ": head counts ", to_string(hq), " and ", to_string(hk), " must be concrete, the first a multiple of the second");
  }
  double scale = n.attr_float("scale", 1.0 / std::sqrt(static_cast<double>(head_size.value())));
  Tensor kr = hq.value() == hk.value() ? k : ops::repeat_heads(k, hq.value() / hk.value());
  Tensor vr = hq.value() == hk.value() ? v : ops::repeat_heads(v, hq.value() / hk.value());
  Tensor scores = ops::matmul(q, kr.transpose(2, 3)) * scale;
  Tensor raw = scores;
  if (softcap > 0) scores = ops::tanh(scores * (1.0 / softcap)) * softcap;
  Tensor capped = scores;
  if (std::optional<Tensor> mask = n.optional(3)) {
    const Expr& kv = scores.shape()[3];
    const Expr& m = mask->shape().back();
    if (m.is_const() && kv.is_const() && m.value() < kv.value()) {  // a shorter mask: the rest is masked out
      std::vector<int64_t> pads(2 * mask->rank(), 0);
      pads[1] = kv.value() - m.value();
      *mask = mask->dtype() == DType::Bool ? ops::pad(*mask, pads, "constant", 0) : ops::pad(*mask, pads, "constant", -INFINITY);
    }
    if (mask->dtype() == DType::Bool) {
      scores = ops::add(scores, ops::neg_inf_where(ops::logical_not(*mask), scores.dtype()));
    } else {
      scores = ops::add(scores, mask->cast(scores.dtype()));
    }
  }
  const Expr& q_len = scores.shape()[2];
  const Expr& kv_len = scores.shape()[3];
  if (!q_len.is_const() || !kv_len.is_const()) n.unsupported("Attention over dynamic sequence lengths");
  int64_t past = 0;
  if (n.has(4)) {
    const Expr& p = n.in(4).shape()[2];
    if (!p.is_const()) n.unsupported("Attention with a dynamic past length");
    past = p.value();
  }
  if (std::optional<Tensor> bad = disallowed(n, scores.shape(), past)) {
    scores = ops::add(scores, ops::neg_inf_where(*bad, scores.dtype()));
  }
  Tensor biased = scores;
  Tensor probs = ops::softmax(scores, -1);
  // A fully masked row gives zeros rather than NaN.
  probs = ops::where(ops::isnan(probs), ops::zeros_like(probs), probs);
  Tensor y = ops::matmul(probs, vr);
  if (three_d) {
    Shape s = y.shape();
    y = y.permute({0, 2, 1, 3}).reshape({s[0], s[2], Expr(-1)});
  }
  int type = n.onnx_type(0);
  std::vector<Value> out{Value::of(y, type), Value::of(k, type), Value::of(v, type)};
  Tensor qk = mode == 0 ? raw : mode == 1 ? capped : mode == 2 ? biased : probs;
  out.push_back(Value::of(qk, type));
  return out;
}

}  // namespace

void add_attention_ops(OpTable& t) { t["Attention"] = attention; }

}  // namespace lumen::onnx
