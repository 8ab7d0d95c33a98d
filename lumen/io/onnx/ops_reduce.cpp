// Reductions, arg-reductions, scans and the softmax family.
#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

// The reduced axes (input 1 from opset 13/18 on, else the `axes` attribute);
// std::nullopt when the reduction is a no-op (empty axes with noop_with_empty_axes).
std::optional<std::vector<int>> reduce_axes(NodeContext& n, const Tensor& x) {
  std::vector<int64_t> axes;
  if (n.has(1)) {
    axes = n.ints(1);
  } else {
    axes = n.attr_ints("axes");
  }
  bool noop = n.attr_int("noop_with_empty_axes", 0) != 0;
  if (axes.empty() && noop) return std::nullopt;
  std::vector<int> out;
  for (int64_t a : axes) out.push_back(onnx_axis(n, a, x.rank(), "axes"));
  if (out.empty()) {
    for (size_t d = 0; d < x.rank(); ++d) out.push_back(static_cast<int>(d));
  }
  return out;
}

using ReduceFn = Tensor (*)(const Tensor&, const std::vector<int>&, bool);

Tensor sum(const Tensor& x, const std::vector<int>& a, bool k) { return ops::sum(x, a, k); }
Tensor mean(const Tensor& x, const std::vector<int>& a, bool k) { return ops::mean(x, a, k); }
Tensor amax(const Tensor& x, const std::vector<int>& a, bool k) { return ops::amax(x, a, k); }
Tensor amin(const Tensor& x, const std::vector<int>& a, bool k) { return ops::amin(x, a, k); }
Tensor prod(const Tensor& x, const std::vector<int>& a, bool k) { return ops::prod(x, a, k); }
Tensor l1(const Tensor& x, const std::vector<int>& a, bool k) { return ops::sum(ops::abs(x), a, k); }
Tensor l2(const Tensor& x, const std::vector<int>& a, bool k) { return ops::sqrt(ops::sum(ops::mul(x, x), a, k)); }
Tensor sum_square(const Tensor& x, const std::vector<int>& a, bool k) { return ops::sum(ops::mul(x, x), a, k); }
Tensor log_sum(const Tensor& x, const std::vector<int>& a, bool k) { return ops::log(ops::sum(x, a, k)); }
Tensor log_sum_exp(const Tensor& x, const std::vector<int>& a, bool k) { return ops::logsumexp(x, a, k); }

template <ReduceFn F>
std::vector<Value> reduce(NodeContext& n) {
  Tensor x = n.in(0);
  bool keepdims = n.attr_int("keepdims", 1) != 0;
  std::optional<std::vector<int>> axes = reduce_axes(n, x);
  if (!axes) return {Value::of(x, n.onnx_type(0))};
  if constexpr (F == amax || F == amin) {  // bool max / min are any / all (false / true over an empty set)
    if (x.dtype() == DType::Bool) {
      Tensor out = F == amax ? ops::any(x, *axes, keepdims) : ops::all(x, *axes, keepdims);
      return {Value::of(out, n.onnx_type(0))};
    }
  }
  Tensor compute = x;
  if (is_storage_only(x.dtype()) || x.dtype() == DType::Bool) compute = x.cast(DType::I32);
  Tensor out = F(compute, *axes, keepdims);
  return {Value::of(out.dtype() == x.dtype() ? out : out.cast(x.dtype()), n.onnx_type(0))};
}

template <bool Max>
std::vector<Value> arg_reduce(NodeContext& n) {
  Tensor x = n.in(0);
  int axis = onnx_axis(n, n.attr_int("axis", 0), x.rank());
  bool keepdims = n.attr_int("keepdims", 1) != 0;
  bool last = n.attr_int("select_last_index", 0) != 0;
  Tensor src = last ? x.flip(axis) : x;
  Tensor idx = Max ? ops::argmax(src, axis, keepdims) : ops::argmin(src, axis, keepdims);
  if (last) {
    const Expr& d = x.shape()[static_cast<size_t>(axis)];
    if (!d.is_const()) n.unsupported("select_last_index over a dynamic dim");
    idx = ops::sub(idx.scalar(static_cast<double>(d.value() - 1)), idx);
  }
  return {Value::of(idx, kInt64)};
}

// Before opset 13 the softmax family coerces its input to 2-D at `axis`
// (default 1) and normalises over the whole second part; x viewed so, with
// the axis to normalise over. `restore` is the input's shape.
std::pair<Tensor, int> softmax_view(NodeContext& n, const Tensor& x, Shape& restore) {
  restore = x.shape();
  if (n.opset() >= 13) return {x, onnx_axis(n, n.attr_int("axis", -1), x.rank())};
  int axis = onnx_axis(n, n.attr_int("axis", 1), x.rank());
  Expr rows(1), cols(1);
  for (size_t d = 0; d < x.rank(); ++d) {
    if (static_cast<int>(d) < axis) {
      rows = rows * x.shape()[d];
    } else {
      cols = cols * x.shape()[d];
    }
  }
  return {x.reshape({simplify(rows), simplify(cols)}), 1};
}

template <bool Log>
std::vector<Value> softmax(NodeContext& n) {
  Shape restore;
  auto [x, axis] = softmax_view(n, n.in(0), restore);
  Tensor y = Log ? ops::log_softmax(x, axis) : ops::softmax(x, axis);
  return {Value::of(y.reshape(restore), n.onnx_type(0))};
}

std::vector<Value> hardmax(NodeContext& n) {
  Shape restore;
  auto [x, axis] = softmax_view(n, n.in(0), restore);
  Tensor idx = ops::argmax(x, axis, true);
  Shape s = x.shape();
  Tensor position = n.graph().iota(loop_index(s, static_cast<size_t>(axis)), s, DType::I64);
  return {Value::of(ops::eq(position, idx).cast(x.dtype()).reshape(restore), n.onnx_type(0))};
}

template <bool Product>
std::vector<Value> scan(NodeContext& n) {
  Tensor x = n.in(0);
  std::vector<int64_t> a = n.ints(1);
  if (a.size() != 1) fail("onnx: ", n.where(), ": axis must hold one value");
  int axis = onnx_axis(n, a[0], x.rank());
  bool exclusive = n.attr_int("exclusive", 0) != 0, reverse = n.attr_int("reverse", 0) != 0;
  Tensor src = reverse ? x.flip(axis) : x;
  if (exclusive) {  // shift by one along the axis, the identity entering first
    std::vector<int64_t> pads(2 * x.rank(), 0);
    pads[2 * (x.rank() - 1 - static_cast<size_t>(axis))] = 1;
    const Expr& d = x.shape()[static_cast<size_t>(axis)];
    src = ops::pad(src, pads, "constant", Product ? 1 : 0).slice(axis, Expr(0), d);
  }
  Tensor out = Product ? ops::cumprod(src, axis) : ops::cumsum(src, axis);
  if (reverse) out = out.flip(axis);
  return {Value::of(out.dtype() == x.dtype() ? out : out.cast(x.dtype()), n.onnx_type(0))};
}

// TopK by ranks: element i's rank is the number of elements before it in the
// order (larger first, or smaller with largest=0; equal values keep index
// order), from an [n, n] comparison; output r takes the element of rank r.
// Quadratic in the axis length, so bounded.
constexpr int64_t kMaxTopKLength = 4096;

std::vector<Value> top_k(NodeContext& n) {
  Tensor x = n.in(0);
  int axis = onnx_axis(n, n.attr_int("axis", -1), x.rank());
  bool largest = n.attr_int("largest", 1) != 0;
  n.attr_int("sorted", 1);  // the result is always sorted, which sorted=0 allows
  std::vector<int64_t> k = n.ints(1);
  const Expr& dim = x.shape()[static_cast<size_t>(axis)];
  if (k.size() != 1 || k[0] < 0) fail("onnx: ", n.where(), ": K must be one non-negative value");
  if (!dim.is_const() || dim.value() > kMaxTopKLength) n.unsupported("TopK over a dynamic axis or one longer than 4096");
  if (k[0] > dim.value()) fail("onnx: ", n.where(), ": K ", k[0], " exceeds the axis length ", dim.value());
  int last = static_cast<int>(x.rank()) - 1;
  Tensor v = x.transpose(axis, last);  // [..., n]
  Tensor mine = v.unsqueeze(last + 1), other = v.unsqueeze(last);  // [..., n, 1] (i), [..., 1, n] (j)
  Shape pair = mine.shape();
  pair.back() = dim;
  Tensor i = n.graph().iota(loop_index(pair, pair.size() - 2), pair, DType::I64);
  Tensor j = n.graph().iota(loop_index(pair, pair.size() - 1), pair, DType::I64);
  Tensor before = largest ? ops::gt(other, mine) : ops::lt(other, mine);
  before = ops::logical_or(before, ops::logical_and(ops::eq(other, mine), ops::lt(j, i)));
  Tensor rank = ops::sum(before.cast(DType::I64), {last + 1});  // [..., n]
  Shape picks = mine.shape();
  picks.back() = Expr(k[0]);
  Tensor r = n.graph().iota(loop_index(picks, picks.size() - 1), picks, DType::I64);
  Tensor match = ops::eq(rank.unsqueeze(last + 1), r);  // [..., n, k]
  Tensor values = ops::sum(ops::where(match, mine.expand(picks), ops::zeros_like(mine).expand(picks)), {last});
  Tensor position = n.graph().iota(loop_index(picks, picks.size() - 2), picks, DType::I64);
  Tensor indices = ops::sum(ops::where(match, position, ops::zeros_like(position)), {last});
  return {Value::of(values.cast(x.dtype()).transpose(axis, last), n.onnx_type(0)), Value::of(indices.transpose(axis, last), kInt64)};
}

}  // namespace

void add_reduce_ops(OpTable& t) {
  t["ReduceSum"] = reduce<sum>;
  t["ReduceMean"] = reduce<mean>;
  t["ReduceMax"] = reduce<amax>;
  t["ReduceMin"] = reduce<amin>;
  t["ReduceProd"] = reduce<prod>;
  t["ReduceL1"] = reduce<l1>;
  t["ReduceL2"] = reduce<l2>;
  t["ReduceSumSquare"] = reduce<sum_square>;
  t["ReduceLogSum"] = reduce<log_sum>;
  t["ReduceLogSumExp"] = reduce<log_sum_exp>;
  t["ArgMax"] = arg_reduce<true>;
  t["ArgMin"] = arg_reduce<false>;
  t["Softmax"] = softmax<false>;
  t["LogSoftmax"] = softmax<true>;
  t["Hardmax"] = hardmax;
  t["CumSum"] = scan<false>;
  t["CumProd"] = scan<true>;
  t["TopK"] = top_k;
}

}  // namespace lumen::onnx
