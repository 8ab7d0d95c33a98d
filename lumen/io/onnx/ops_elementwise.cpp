// Elementwise binary and variadic ops, comparisons, logic, Where and Clip.
// Integer results keep the inputs' dtype (lumen computes 8-bit integers in
// i32); known integer inputs (shape arithmetic) fold at import.
#include <cmath>

#include "lumen/core/error.h"
#include "lumen/io/onnx/fold.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

// The result in the dtype of input 0 (ONNX ops keep their input type).
std::vector<Value> like_input(NodeContext& n, const Tensor& t) {
  Tensor x = n.in(0);
  Tensor out = t.dtype() == x.dtype() ? t : t.cast(x.dtype());
  return {Value::of(out, n.onnx_type(0))};
}

template <Tensor (*F)(const Tensor&, const Tensor&)>
std::vector<Value> arithmetic(NodeContext& n) {
  return like_input(n, F(n.in(0), n.in(1)));
}

std::vector<Value> add(NodeContext& n) {
  if (auto v = fold_binary(n, 0, 1, [](Expr a, Expr b) { return a + b; }, n.onnx_type(0))) return {*v};
  return arithmetic<ops::add>(n);
}
std::vector<Value> sub(NodeContext& n) {
  if (auto v = fold_binary(n, 0, 1, [](Expr a, Expr b) { return a - b; }, n.onnx_type(0))) return {*v};
  return arithmetic<ops::sub>(n);
}
std::vector<Value> mul(NodeContext& n) {
  if (auto v = fold_binary(n, 0, 1, [](Expr a, Expr b) { return a * b; }, n.onnx_type(0))) return {*v};
  return arithmetic<ops::mul>(n);
}

// Integer division truncates toward zero (C semantics, as ONNX Runtime).
std::vector<Value> div(NodeContext& n) {
  if (auto v = fold_binary(n, 0, 1, [](Expr a, Expr b) { return a / b; }, n.onnx_type(0))) return {*v};
  Tensor a = n.in(0), b = n.in(1);
  if (is_float(a.dtype())) return like_input(n, ops::div(a, b));
  return like_input(n, ops::floor_divide(ops::sub(a, ops::fmod(a, b)), b));
}

std::vector<Value> pow(NodeContext& n) { return like_input(n, ops::pow(n.in(0), n.in(1))); }

std::vector<Value> mod(NodeContext& n) {
  bool c_fmod = n.attr_int("fmod", 0) != 0;
  if (!c_fmod) {
    if (auto v = fold_binary(n, 0, 1, [](Expr a, Expr b) { return a % b; }, n.onnx_type(0))) return {*v};
  }
  Tensor a = n.in(0), b = n.in(1);
  return like_input(n, c_fmod ? ops::fmod(a, b) : ops::remainder(a, b));
}

template <Tensor (*F)(const Tensor&, const Tensor&)>
std::vector<Value> compare(NodeContext& n) {
  return {Value::of(F(n.in(0), n.in(1)), kBool)};
}

// A comparison or logic op, folded when both inputs are known integers.
template <Tensor (*F)(const Tensor&, const Tensor&), Expr (*E)(Expr, Expr)>
std::vector<Value> folding_compare(NodeContext& n) {
  if (auto v = fold_binary(n, 0, 1, E, kBool)) return {*v};
  return compare<F>(n);
}

Expr expr_lt(Expr a, Expr b) { return lt(a, b); }
Expr expr_le(Expr a, Expr b) { return le(a, b); }
Expr expr_gt(Expr a, Expr b) { return gt(a, b); }
Expr expr_ge(Expr a, Expr b) { return ge(a, b); }
Expr expr_and(Expr a, Expr b) { return logical_and(a, b); }
Expr expr_or(Expr a, Expr b) { return logical_or(a, b); }
Expr expr_xor(Expr a, Expr b) { return ne(ne(a, Expr(0)), ne(b, Expr(0))); }
Expr expr_max(Expr a, Expr b) { return max(a, b); }
Expr expr_min(Expr a, Expr b) { return min(a, b); }

std::vector<Value> equal(NodeContext& n) {
  if (auto v = fold_binary(n, 0, 1, [](Expr a, Expr b) { return eq(a, b); }, kBool)) return {*v};
  return compare<ops::eq>(n);
}

std::vector<Value> not_op(NodeContext& n) {
  Value& x = n.value(0);
  if (x.known && !x.is_float()) {
    Value out = x;
    for (Expr& e : out.ints) e = logical_not(e);
    out.tensor = Tensor();
    return {out};
  }
  return {Value::of(ops::logical_not(n.in(0)), kBool)};
}

std::vector<Value> where(NodeContext& n) {
  if (n.known(0) && n.known(1) && n.known(2) && !n.value(1).is_float() && !n.value(1).host) {
    Value& c = n.value(0);
    Value& a = n.value(1);
    Value& b = n.value(2);
    if (c.numel() == a.numel() && a.numel() == b.numel() && c.shape == a.shape && a.shape == b.shape) {
      std::vector<Expr> out;
      for (size_t k = 0; k < a.ints.size(); ++k) out.push_back(select(c.ints[k], a.ints[k], b.ints[k]));
      return {Value::of_ints(out, a.concrete_shape(n.where()), a.onnx_type)};
    }
  }
  Tensor a = n.in(1);
  Tensor out = ops::where(n.in(0), a, n.in(2));
  return {Value::of(out.dtype() == a.dtype() ? out : out.cast(a.dtype()), n.onnx_type(1))};
}

template <Tensor (*F)(const Tensor&, const Tensor&), Expr (*E)(Expr, Expr) = nullptr>
std::vector<Value> variadic(NodeContext& n) {
  if (E != nullptr && n.num_inputs() == 2) {
    if (auto v = fold_binary(n, 0, 1, E, n.onnx_type(0))) return {*v};
  }
  Tensor acc = n.in(0);
  for (size_t k = 1; k < n.num_inputs(); ++k) acc = F(acc, n.in(k));
  if (n.num_inputs() == 1) acc = ops::broadcast_to(acc, acc.shape());
  return like_input(n, acc);
}

std::vector<Value> mean(NodeContext& n) {
  Tensor acc = n.in(0);
  for (size_t k = 1; k < n.num_inputs(); ++k) acc = ops::add(acc, n.in(k));
  return like_input(n, ops::div(acc, acc.scalar(static_cast<double>(n.num_inputs()))));
}

std::vector<Value> clip(NodeContext& n) {
  Tensor x = n.in(0);
  std::optional<Tensor> lo = n.optional(1), hi = n.optional(2);
  if (lo) x = ops::where(ops::lt(x, *lo), lo->cast(x.dtype()).expand(x.shape()), x);
  if (hi) x = ops::where(ops::gt(x, *hi), hi->cast(x.dtype()).expand(x.shape()), x);
  return like_input(n, x);
}

std::vector<Value> prelu(NodeContext& n) {
  Tensor x = n.in(0), slope = n.in(1);
  return like_input(n, ops::where(ops::lt(x, x.scalar(0)), ops::mul(x, slope), x));
}

std::vector<Value> is_nan(NodeContext& n) { return {Value::of(ops::isnan(n.in(0)), kBool)}; }

std::vector<Value> is_inf(NodeContext& n) {
  bool negative = n.attr_int("detect_negative", 1) != 0, positive = n.attr_int("detect_positive", 1) != 0;
  Tensor x = n.in(0);
  Tensor inf = ops::isinf(x);
  if (negative && positive) return {Value::of(inf, kBool)};
  if (!negative && !positive) return {Value::of(ops::zeros(n.graph(), x.shape(), DType::Bool), kBool)};
  Tensor sign = negative ? ops::lt(x, x.scalar(0)) : ops::gt(x, x.scalar(0));
  return {Value::of(ops::logical_and(inf, sign), kBool)};
}

// SwiGLU: swish(a, alpha) * b, inputs of one shape.
std::vector<Value> swiglu(NodeContext& n) {
  Tensor a = n.in(0), b = n.in(1);
  if (!(a.shape() == b.shape())) fail("onnx: ", n.where(), ": A ", to_string(a.shape()), " and B ", to_string(b.shape()), " must have one shape");
  double alpha = n.attr_float("alpha", 1.0);
  return like_input(n, ops::mul(ops::mul(a, ops::sigmoid(a * alpha)), b));
}

}  // namespace

void add_elementwise_ops(OpTable& t) {
  t["Add"] = add;
  t["Sub"] = sub;
  t["Mul"] = mul;
  t["Div"] = div;
  t["Pow"] = pow;
  t["Mod"] = mod;
  t["Equal"] = equal;
  t["Less"] = folding_compare<ops::lt, expr_lt>;
  t["LessOrEqual"] = folding_compare<ops::le, expr_le>;
  t["Greater"] = folding_compare<ops::gt, expr_gt>;
  t["GreaterOrEqual"] = folding_compare<ops::ge, expr_ge>;
  t["And"] = folding_compare<ops::logical_and, expr_and>;
  t["Or"] = folding_compare<ops::logical_or, expr_or>;
  t["Xor"] = folding_compare<ops::logical_xor, expr_xor>;
  t["Not"] = not_op;
  t["Where"] = where;
  t["Max"] = variadic<ops::maximum, expr_max>;
  t["Min"] = variadic<ops::minimum, expr_min>;
  t["Sum"] = variadic<ops::add>;
  t["Mean"] = mean;
  t["Clip"] = clip;
  t["PRelu"] = prelu;
  t["IsNaN"] = is_nan;
  t["IsInf"] = is_inf;
  t["SwiGLU"] = swiglu;
}

}  // namespace lumen::onnx
