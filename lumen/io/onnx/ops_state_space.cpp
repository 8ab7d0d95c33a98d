// Recurrent-state ops of opset 27: LinearAttention (linear / gated / delta /
// gated-delta state updates, grouped-query heads) unrolled over the sequence,
// and CausalConvWithState (a depthwise causal conv carrying its last k - 1
// inputs). State is carried in f32, as the spec's reference does.
#include <cmath>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

constexpr int64_t kMaxSteps = 4096;

// [B, T, H * D] -> [B, H, T, D] in f32.
Tensor heads_f32(NodeContext& n, const Tensor& x, int64_t heads, const char* what) {
  if (x.rank() != 3 || heads <= 0) fail("onnx: ", n.where(), ": ", what, " ", to_string(x.shape()), " must be 3-D [B, T, H * D]");
  Shape s = x.shape();
  return x.reshape({s[0], s[1], Expr(heads), Expr(-1)}).permute({0, 2, 1, 3}).cast(DType::F32);
}

// Step t of a [B, H, T, D] tensor: [B, H, D].
Tensor step(const Tensor& x, int64_t t) { return x.slice(2, Expr(t), Expr(t + 1)).squeeze(2); }

struct LinearAttentionRule {
  bool gating = false, delta = false;
};

LinearAttentionRule update_rule(NodeContext& n) {
  std::string rule = n.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") {
    n.unsupported_attribute("update_rule", "'" + rule + "' is not one of linear, gated, delta, gated_delta");
  }
  LinearAttentionRule r{rule == "gated" || rule == "gated_delta", rule == "delta" || rule == "gated_delta"};
  if (r.gating != n.has(4)) fail("onnx: ", n.where(), ": update_rule '", rule, "' ", r.gating ? "needs" : "forbids", " the decay input");
  if (r.delta != n.has(5)) fail("onnx: ", n.where(), ": update_rule '", rule, "' ", r.delta ? "needs" : "forbids", " the beta input");
  return r;
}

std::vector<Value> linear_attention(NodeContext& n) {
  n.attr_int("chunk_size", 0);  // a tuning hint with no effect on the result
  int64_t hq = n.attr_int("q_num_heads"), hkv = n.attr_int("kv_num_heads");
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0) fail("onnx: ", n.where(), ": q_num_heads ", hq, " must be a positive multiple of kv_num_heads ", hkv);
  LinearAttentionRule rule = update_rule(n);
  Tensor q = heads_f32(n, n.in(0), hq, "query"), k = heads_f32(n, n.in(1), hkv, "key"), v = heads_f32(n, n.in(2), hkv, "value");
  const Expr &b = q.shape()[0], &len = q.shape()[2], &dk = q.shape()[3], &dv = v.shape()[3];
  if (!len.is_const() || !dk.is_const()) n.unsupported("LinearAttention over a dynamic sequence length or head size");
  if (len.value() > kMaxSteps) n.unsupported("LinearAttention over more than " + std::to_string(kMaxSteps) + " steps");
  double scale = n.attr_float("scale", 0.0);
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(dk.value()));
  Shape state_shape{b, Expr(hkv), dk, dv};
  Tensor state = n.has(3) ? n.in(3).cast(DType::F32) : ops::zeros(n.graph(), state_shape, DType::F32);
  Tensor decay, beta;
  if (rule.gating) {  // [B, T, Hkv] (per head) or [B, T, Hkv * dk] (per key dim) -> [B, Hkv, T, 1 | dk]
    Tensor g = n.in(4);
    bool per_head = g.rank() == 3 && g.shape()[2].is_const(hkv);
    decay = per_head ? g.reshape({b, len, Expr(hkv), Expr(1)}).permute({0, 2, 1, 3}).cast(DType::F32) : heads_f32(n, g, hkv, "decay");
  }
  if (rule.delta) {  // [B, T, Hkv | 1] -> [B, Hkv | 1, T, 1]
    Tensor be = n.in(5);
    if (be.rank() != 3) fail("onnx: ", n.where(), ": beta ", to_string(be.shape()), " must be 3-D");
    beta = be.unsqueeze(3).permute({0, 2, 1, 3}).cast(DType::F32);
  }
  std::vector<Tensor> outputs;
  for (int64_t t = 0; t < len.value(); ++t) {
    Tensor k_t = step(k, t), v_t = step(v, t);
    if (rule.gating) state = ops::mul(state, ops::exp(step(decay, t)).unsqueeze(3));
    if (rule.delta) {
      Tensor retrieved = ops::matmul(k_t.unsqueeze(2), state).squeeze(2);  // sum_d state[d, m] k[d]
      v_t = ops::mul(step(beta, t), ops::sub(v_t, retrieved));
    }
    state = ops::add(state, ops::mul(k_t.unsqueeze(3), v_t.unsqueeze(2)));
    Tensor read = hq == hkv ? state : ops::repeat_heads(state, hq / hkv);
    outputs.push_back(ops::matmul(step(q, t).unsqueeze(2), read) * scale);  // [B, Hq, 1, dv]
  }
  Tensor y = (outputs.size() == 1 ? outputs[0] : ops::concat(outputs, 2)).permute({0, 2, 1, 3});
  y = y.reshape({b, len, simplify(Expr(hq) * dv)});
  int out_type = n.onnx_type(0), state_type = n.has(3) ? n.onnx_type(3) : out_type;
  return {Value::of(y, out_type), Value::of(state, state_type)};
}

// Depthwise causal conv over [B, C, L] with weight [C, 1, k]: the input is
// prefixed by past_state (or zeros) of k - 1 steps; present_state is the last
// k - 1 steps of that. Optional SiLU.
std::vector<Value> causal_conv_with_state(NodeContext& n) {
  std::string activation = n.attr_string("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish") {
    n.unsupported_attribute("activation", "'" + activation + "' is not one of none, silu, swish");
  }
  Tensor x = n.in(0), w = n.in(1);
  if (x.rank() != 3 || w.rank() != 3) n.unsupported("CausalConvWithState that is not 1-D (input [B, C, L], weight [C, 1, k])");
  const Expr& kd = w.shape()[2];
  if (!kd.is_const() || kd.value() < 1) n.unsupported("a dynamic kernel size");
  int64_t k = kd.value();
  Shape s = x.shape();
  Tensor past = n.has(3) ? n.in(3).cast(x.dtype()) : ops::zeros(n.graph(), {s[0], s[1], Expr(k - 1)}, x.dtype());
  Tensor padded = k > 1 ? ops::concat({past, x}, 2) : x;
  const Expr& channels = s[1];
  if (!channels.is_const()) n.unsupported("a dynamic channel count");
  // In f32, rounded to the input's dtype once (as the reference: a half-precision
  // conv rounding each product would differ).
  std::optional<Tensor> bias = n.optional(2);
  if (bias) bias = bias->cast(DType::F32);
  Tensor y = ops::conv1d(padded.cast(DType::F32), w.cast(DType::F32), bias, 1, 0, 1, channels.value()).cast(x.dtype());
  if (activation != "none") {  // in f32 from the rounded conv output, as the reference
    Tensor f = y.cast(DType::F32);
    y = ops::mul(f, ops::sigmoid(f)).cast(x.dtype());
  }
  Expr total = simplify(s[2] + Expr(k - 1));
  Tensor present = padded.slice(2, simplify(total - Expr(k - 1)), total);
  return {Value::of(y, n.onnx_type(0)), Value::of(present, n.onnx_type(0))};
}

}  // namespace

void add_state_space_ops(OpTable& t) {
  t["LinearAttention"] = linear_attention;
  t["CausalConvWithState"] = causal_conv_with_state;
}

}  // namespace lumen::onnx
