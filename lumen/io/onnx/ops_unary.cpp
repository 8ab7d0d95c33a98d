// Unary math and activations, each composed from lumen's ops.
#include <cmath>

#include "lumen/core/error.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

// Half-precision inputs are computed in f32 and rounded once on the way out
// (keep_type), as ONNX Runtime and the reference (numpy ufuncs) do: lumen's
// compositions (exp as exp2 of a product, ...) would round every step.
Tensor compute_input(NodeContext& n) {
  Tensor x = n.in(0);
  return x.dtype() == DType::F16 || x.dtype() == DType::BF16 ? x.cast(DType::F32) : x;
}

std::vector<Value> keep_type(NodeContext& n, const Tensor& t) {
  Tensor x = n.in(0);
  return {Value::of(t.dtype() == x.dtype() ? t : t.cast(x.dtype()), n.onnx_type(0))};
}

template <Tensor (*F)(const Tensor&)>
std::vector<Value> unary(NodeContext& n) {
  return keep_type(n, F(compute_input(n)));
}

Tensor sinh(const Tensor& x) { return ops::sub(ops::exp(x), ops::exp(ops::neg(x))) * 0.5; }
Tensor cosh(const Tensor& x) { return ops::add(ops::exp(x), ops::exp(ops::neg(x))) * 0.5; }
Tensor asinh(const Tensor& x) { return ops::log(ops::add(x, ops::sqrt(ops::add(ops::mul(x, x), x.scalar(1))))); }
Tensor acosh(const Tensor& x) { return ops::log(ops::add(x, ops::sqrt(ops::sub(ops::mul(x, x), x.scalar(1))))); }
Tensor atanh(const Tensor& x) { return ops::log(ops::div(ops::add(x.scalar(1), x), ops::sub(x.scalar(1), x))) * 0.5; }
// atan by range reduction: |x| > 1 -> pi/2 - atan(1/|x|); t > tan(pi/12) ->
// pi/6 + atan((t sqrt3 - 1) / (t + sqrt3)); then the odd series to u^11 on
// |u| <= tan(pi/12) (error below 3e-9); the sign restored.
Tensor atan(const Tensor& x) {
  const double sqrt3 = std::sqrt(3.0), tan15 = 2.0 - sqrt3;
  Tensor a = ops::abs(x);
  Tensor big = ops::gt(a, a.scalar(1));
  Tensor t = ops::where(big, ops::reciprocal(a), a);
  Tensor shifted = ops::gt(t, t.scalar(tan15));
  Tensor u = ops::where(shifted, ops::div(t * sqrt3 - 1.0, t + sqrt3), t);
  Tensor u2 = ops::mul(u, u);
  Tensor series = u2.scalar(-1.0 / 11);
  for (int k : {9, 7, 5, 3}) series = ops::add(ops::mul(series, u2), u2.scalar((k % 4 == 1 ? 1.0 : -1.0) / k));
  Tensor r = ops::add(ops::mul(ops::mul(series, u2), u), u);
  r = ops::where(shifted, r + M_PI / 6, r);
  r = ops::where(big, ops::sub(r.scalar(M_PI / 2), r), r);
  return ops::mul(ops::sign(x), r);
}
Tensor asin(const Tensor& x) { return atan(ops::div(x, ops::sqrt(ops::sub(x.scalar(1), ops::mul(x, x))))); }
// 2 atan(sqrt((1 - x) / (1 + x))): accurate near x = 1, where pi/2 - asin(x) cancels.
Tensor acos(const Tensor& x) {
  return atan(ops::sqrt(ops::div(ops::sub(x.scalar(1), x), ops::add(x.scalar(1), x)))) * 2.0;
}
Tensor softsign(const Tensor& x) { return ops::div(x, ops::add(ops::abs(x), x.scalar(1))); }
Tensor hard_swish(const Tensor& x) {
  return ops::mul(x, ops::clamp(ops::add(x * (1.0 / 6), x.scalar(0.5)), 0.0, 1.0));
}

// Neg of known integers (shape arithmetic) folds at import.
std::vector<Value> neg_op(NodeContext& n) {
  Value& x = n.value(0);
  if (x.known && !x.is_float() && !x.tensor.defined()) {
    Value out = x;
    for (Expr& e : out.ints) e = -e;
    return {out};
  }
  return keep_type(n, ops::neg(n.in(0)));
}

std::vector<Value> leaky_relu(NodeContext& n) {
  return keep_type(n, ops::leaky_relu(compute_input(n), n.attr_float("alpha", 0.01)));
}

std::vector<Value> elu(NodeContext& n) {
  Tensor x = compute_input(n);
  double alpha = n.attr_float("alpha", 1.0);
  Tensor negative = ops::exp(ops::minimum(x, x.scalar(0))) - 1.0;
  return keep_type(n, ops::where(ops::gt(x, x.scalar(0)), x, negative * alpha));
}

std::vector<Value> celu(NodeContext& n) {
  Tensor x = compute_input(n);
  double alpha = n.attr_float("alpha", 1.0);
  Tensor negative = (ops::exp(ops::minimum(x, x.scalar(0)) / alpha) - 1.0) * alpha;
  return keep_type(n, ops::add(ops::maximum(x, x.scalar(0)), ops::minimum(x.scalar(0), negative)));
}

std::vector<Value> selu(NodeContext& n) {
  Tensor x = compute_input(n);
  double alpha = n.attr_float("alpha", 1.67326319217681884765625), gamma = n.attr_float("gamma", 1.05070102214813232421875);
  Tensor negative = (ops::exp(ops::minimum(x, x.scalar(0))) - 1.0) * alpha;
  return keep_type(n, ops::where(ops::gt(x, x.scalar(0)), x, negative) * gamma);
}

std::vector<Value> hard_sigmoid(NodeContext& n) {
  Tensor x = compute_input(n);
  double alpha = n.attr_float("alpha", 0.2), beta = n.attr_float("beta", 0.5);
  return keep_type(n, ops::clamp(x * alpha + beta, 0.0, 1.0));
}

std::vector<Value> thresholded_relu(NodeContext& n) {
  Tensor x = compute_input(n);
  double alpha = n.attr_float("alpha", 1.0);
  return keep_type(n, ops::where(ops::gt(x, x.scalar(alpha)), x, ops::zeros_like(x)));
}

std::vector<Value> shrink(NodeContext& n) {
  Tensor x = compute_input(n);
  double bias = n.attr_float("bias", 0.0), lambd = n.attr_float("lambd", 0.5);
  Tensor compute = is_float(x.dtype()) ? x : x.cast(DType::F32);
  Tensor out = ops::where(ops::lt(compute, compute.scalar(-lambd)), compute + bias,
                          ops::where(ops::gt(compute, compute.scalar(lambd)), compute - bias, ops::zeros_like(compute)));
  return keep_type(n, out);
}

std::vector<Value> softplus(NodeContext& n) {
  Tensor x = compute_input(n);
  // log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|)).
  return keep_type(n, ops::add(ops::maximum(x, x.scalar(0)), ops::log(ops::exp(ops::neg(ops::abs(x))) + 1.0)));
}

std::vector<Value> gelu(NodeContext& n) {
  std::string approximate = n.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh") n.unsupported_attribute("approximate", "must be none or tanh");
  return keep_type(n, ops::gelu(compute_input(n), approximate == "tanh"));
}

std::vector<Value> swish(NodeContext& n) {
  Tensor x = compute_input(n);
  double alpha = n.attr_float("alpha", 1.0);
  return keep_type(n, ops::mul(x, ops::sigmoid(x * alpha)));
}

}  // namespace

void add_unary_ops(OpTable& t) {
  t["Abs"] = unary<ops::abs>;
  t["Neg"] = neg_op;
  t["Sign"] = unary<ops::sign>;
  t["Exp"] = unary<ops::exp>;
  t["Log"] = unary<ops::log>;
  t["Sqrt"] = unary<ops::sqrt>;
  t["Reciprocal"] = unary<ops::reciprocal>;
  t["Sin"] = unary<ops::sin>;
  t["Cos"] = unary<ops::cos>;
  t["Tan"] = unary<ops::tan>;
  t["Tanh"] = unary<ops::tanh>;
  t["Sinh"] = unary<sinh>;
  t["Cosh"] = unary<cosh>;
  t["Asinh"] = unary<asinh>;
  t["Acosh"] = unary<acosh>;
  t["Atanh"] = unary<atanh>;
  t["Atan"] = unary<atan>;
  t["Asin"] = unary<asin>;
  t["Acos"] = unary<acos>;
  t["Erf"] = unary<ops::erf>;
  t["Sigmoid"] = unary<ops::sigmoid>;
  t["Relu"] = unary<ops::relu>;
  t["Floor"] = unary<ops::floor>;
  t["Ceil"] = unary<ops::ceil>;
  t["Round"] = unary<ops::round>;
  t["Softsign"] = unary<softsign>;
  t["HardSwish"] = unary<hard_swish>;
  t["Mish"] = unary<ops::mish>;
  t["LeakyRelu"] = leaky_relu;
  t["Elu"] = elu;
  t["Celu"] = celu;
  t["Selu"] = selu;
  t["HardSigmoid"] = hard_sigmoid;
  t["ThresholdedRelu"] = thresholded_relu;
  t["Shrink"] = shrink;
  t["Softplus"] = softplus;
  t["Gelu"] = gelu;
  t["Swish"] = swish;
}

}  // namespace lumen::onnx
