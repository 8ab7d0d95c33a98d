// Constants, identity, casts and control flow (If, Loop unrolled at import).
#include <algorithm>

#include "lumen/core/error.h"
#include "lumen/io/onnx/narrow_types.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"
#include "onnx/onnx.pb.h"

namespace lumen::onnx {

namespace {

// Unrolling is bounded: iterations, and iterations x body nodes (the graph it builds).
constexpr int64_t kMaxUnroll = 1024;
constexpr int64_t kMaxUnrolledNodes = 100000;

std::vector<Value> constant(NodeContext& n) {
  if (n.has_attr("value")) {
    auto host = std::make_shared<HostTensor>(decode_tensor(n.attr_tensor("value"), n.importer().folder()));
    return {Value::of_host(host)};
  }
  if (n.has_attr("value_float")) return {Value::of_reals({n.attr_float("value_float", 0)}, {})};
  if (n.has_attr("value_floats")) {
    std::vector<double> v = n.attr_floats("value_floats");
    return {Value::of_reals(v, {static_cast<int64_t>(v.size())})};
  }
  if (n.has_attr("value_int")) return {Value::of_ints({Expr(n.attr_int("value_int"))}, {})};
  if (n.has_attr("value_ints")) {
    std::vector<Expr> v;
    for (int64_t x : n.attr_ints("value_ints")) v.push_back(Expr(x));
    return {Value::of_ints(v, {static_cast<int64_t>(v.size())})};
  }
  n.unsupported("Constant without a value, value_float(s) or value_int(s) attribute (sparse and string values are not supported)");
}

std::vector<Value> identity(NodeContext& n) { return {n.value(0)}; }

Value cast_value(NodeContext& n, Value v, int to) {
  std::string what = n.where() + " output";
  DType dtype = data_dtype(to, what);
  if (v.onnx_type == to) return v;
  if (is_narrow_type(to)) {
    n.unsupported(std::string("Cast to ") + onnx_type_name(to) + " (lumen reads this element type but does not encode it)");
  }
  if (is_code_type(v.onnx_type)) {  // float8 / float4 codes: their values through the format's table, then as a float
    return cast_value(n, Value::of(values_f32(n, 0), kFloat), to);
  }
  if (v.known && !v.host) {
    bool to_int = onnx_type_is_integer(to);
    if (to_int && !v.reals.empty()) {
      std::vector<Expr> ints;
      for (double r : v.reals) {
        if (!(r > -9.2e18 && r < 9.2e18)) return Value::of(n.importer().tensor(v, what).cast(dtype), to);
        int64_t i = static_cast<int64_t>(r);
        ints.push_back(Expr(to == kBool ? static_cast<int64_t>(r != 0) : i));
      }
      Value out = Value::of_ints(ints, v.concrete_shape(what), to);
      return out;
    }
    if (to_int && v.reals.empty()) {
      std::vector<Expr> ints = v.ints;
      if (to == kBool) {
        for (Expr& e : ints) e = ne(e, Expr(0));
      }
      bool wraps = to != kInt64 && to != kBool;  // narrower integer types wrap: compute it in the graph
      if (!wraps) return Value::of_ints(ints, v.concrete_shape(what), to);
    }
    if (!to_int && !v.reals.empty() && onnx_type_is_float(to)) {  // float -> float: values kept, rounded when materialised
      Value out = Value::of_reals(v.reals, v.concrete_shape(what), to);
      return out;
    }
    if (!to_int && v.reals.empty() && onnx_type_is_float(to)) {
      bool all_const = true;
      std::vector<double> reals;
      for (const Expr& e : v.ints) {
        all_const = all_const && e.is_const();
        if (e.is_const()) reals.push_back(static_cast<double>(e.value()));
      }
      if (all_const && to == kFloat) return Value::of_reals(reals, v.concrete_shape(what), to);
    }
  }
  Tensor t = n.importer().tensor(v, n.where() + " input");
  return Value::of(t.dtype() == dtype ? t : t.cast(dtype), to);
}

std::vector<Value> cast(NodeContext& n) {
  n.attr_int("saturate", 1);  // only matters for float8 targets, which lumen refuses
  if (n.has_attr("round_mode")) n.attr_string("round_mode", "up");
  return {cast_value(n, n.value(0), static_cast<int>(n.attr_int("to")))};
}

std::vector<Value> cast_like(NodeContext& n) {
  n.attr_int("saturate", 1);
  if (n.has_attr("round_mode")) n.attr_string("round_mode", "up");
  return {cast_value(n, n.value(0), n.onnx_type(1))};
}

// A condition known at import: its value, or std::nullopt when it is not known.
std::optional<bool> condition_value(NodeContext& n, Value& v, const char* what) {
  if (!v.known) return std::nullopt;
  if (v.numel() != 1) fail("onnx: ", n.where(), ": ", what, " must hold one element, has shape ", to_string(v.shape));
  const Expr& e = v.ints.empty() ? Expr(static_cast<int64_t>(!v.reals.empty() && v.reals[0] != 0)) : v.ints[0];
  if (!e.is_const()) n.unsupported(std::string(what) + " depends on a dynamic dim");
  return e.value() != 0;
}

// The condition of input `i`, which must be known (a graph input can be fixed at import).
bool known_condition(NodeContext& n, size_t i, const char* what) {
  std::optional<bool> c = condition_value(n, n.value(i), what);
  if (!c) n.need_known(i, what);
  return *c;
}

// If: a condition known at import takes its branch. A run-time condition
// imports both branches and selects between their outputs elementwise
// (branches have no side effects), when their shapes and types agree.
std::vector<Value> if_op(NodeContext& n) {
  const ::onnx::GraphProto& then_branch = n.attr_graph("then_branch");
  const ::onnx::GraphProto& else_branch = n.attr_graph("else_branch");
  if (std::optional<bool> taken = condition_value(n, n.value(0), "the If condition")) {
    return n.importer().import_body(*taken ? then_branch : else_branch, {}, n.where());
  }
  std::vector<Value> a = n.importer().import_body(then_branch, {}, n.where() + " then_branch");
  std::vector<Value> b = n.importer().import_body(else_branch, {}, n.where() + " else_branch");
  if (a.size() != b.size()) fail("onnx: ", n.where(), ": the branches have ", a.size(), " and ", b.size(), " outputs");
  Tensor cond = n.in(0).reshape({});
  std::vector<Value> out;
  for (size_t k = 0; k < a.size(); ++k) {
    Tensor x = n.importer().tensor(a[k], n.where() + " then output"), y = n.importer().tensor(b[k], n.where() + " else output");
    if (a[k].onnx_type != b[k].onnx_type || !(x.shape() == y.shape())) {
      n.unsupported("a run-time condition whose branches give different shapes or types (" + to_string(x.shape()) +
                    " and " + to_string(y.shape()) + "); fix the condition at import (LoadOptions::fixed_inputs)");
    }
    out.push_back(Value::of(ops::where(cond.expand(x.shape()), x, y), a[k].onnx_type));
  }
  return out;
}

// Loop with a trip count and condition known at import: the body is imported
// once per iteration; scan outputs are stacked along a new axis 0.
std::vector<Value> loop(NodeContext& n) {
  const ::onnx::GraphProto& body = n.attr_graph("body");
  int64_t trips = kMaxUnroll + 1;
  if (n.has(0)) {
    std::vector<int64_t> m = n.ints(0);
    if (m.size() != 1) n.unsupported("a trip count that is not a scalar");
    trips = m[0];
  }
  bool cond = true;
  if (n.has(1)) cond = known_condition(n, 1, "the Loop condition");
  std::vector<Value> carried;
  for (size_t k = 2; k < n.num_inputs(); ++k) carried.push_back(n.value(k));
  if (static_cast<size_t>(body.output_size()) < 1 + carried.size()) {
    fail("onnx: ", n.where(), ": the Loop body has ", body.output_size(), " outputs; it needs the condition and ",
         carried.size(), " loop-carried values");
  }
  size_t num_scan = static_cast<size_t>(body.output_size()) - 1 - carried.size();
  std::vector<std::vector<Tensor>> scans(num_scan);
  int64_t it = 0;
  for (; it < trips && cond; ++it) {
    if (it >= kMaxUnroll || (it + 1) * body.node_size() > kMaxUnrolledNodes) {
      n.unsupported("a Loop of more than " + std::to_string(std::min<int64_t>(kMaxUnroll, kMaxUnrolledNodes / std::max(1, body.node_size()))) +
                    " iterations (or unbounded) to unroll");
    }
    std::vector<Value> inputs{Value::of_ints({Expr(it)}, {}), Value::of_ints({Expr(int64_t{1})}, {}, kBool)};
    inputs.insert(inputs.end(), carried.begin(), carried.end());
    std::vector<Value> out = n.importer().import_body(body, inputs, n.where());
    std::optional<bool> next = condition_value(n, out[0], "the Loop body's condition output");
    if (!next) n.unsupported("a Loop whose body computes its condition at run time (lumen unrolls loops at import)");
    cond = *next;
    for (size_t k = 0; k < carried.size(); ++k) carried[k] = out[1 + k];
    for (size_t k = 0; k < num_scan; ++k) {
      scans[k].push_back(n.importer().tensor(out[1 + carried.size() + k], n.where() + " scan output"));
    }
  }
  std::vector<Value> results = carried;
  for (size_t k = 0; k < num_scan; ++k) {
    if (scans[k].empty()) n.unsupported("a Loop that runs zero times and has scan outputs");
    results.push_back(single(ops::stack(scans[k], 0))[0]);
  }
  return results;
}

// Scan (opset 9 on), unrolled at import over the scan inputs' (concrete)
// length: each step imports the body with the carried state and one slice of
// every scan input; scan outputs are stacked along their output axes.
std::vector<Value> scan(NodeContext& n) {
  const ::onnx::GraphProto& body = n.attr_graph("body");
  size_t m = static_cast<size_t>(n.attr_int("num_scan_inputs"));
  if (m == 0 || m > n.num_inputs()) fail("onnx: ", n.where(), ": num_scan_inputs ", m, " does not fit ", n.num_inputs(), " inputs");
  size_t states = n.num_inputs() - m;
  if (static_cast<size_t>(body.output_size()) < states) fail("onnx: ", n.where(), ": the body has fewer outputs than states");
  size_t k_out = static_cast<size_t>(body.output_size()) - states;
  std::vector<int64_t> in_axes = n.attr_ints("scan_input_axes", std::vector<int64_t>(m, 0));
  std::vector<int64_t> in_dirs = n.attr_ints("scan_input_directions", std::vector<int64_t>(m, 0));
  std::vector<int64_t> out_axes = n.attr_ints("scan_output_axes", std::vector<int64_t>(k_out, 0));
  std::vector<int64_t> out_dirs = n.attr_ints("scan_output_directions", std::vector<int64_t>(k_out, 0));
  if (in_axes.size() != m || in_dirs.size() != m || out_axes.size() != k_out || out_dirs.size() != k_out) {
    fail("onnx: ", n.where(), ": scan axes / directions do not match ", m, " scan inputs and ", k_out, " scan outputs");
  }
  std::vector<Tensor> xs;
  std::vector<int> axes;
  int64_t length = -1;
  for (size_t j = 0; j < m; ++j) {
    xs.push_back(n.in(states + j));
    axes.push_back(onnx_axis(n, in_axes[j], xs[j].rank(), "scan_input_axes"));
    const Expr& d = xs[j].shape()[static_cast<size_t>(axes[j])];
    if (!d.is_const()) n.unsupported("a Scan over a dynamic length (lumen unrolls it at import)");
    if (length >= 0 && d.value() != length) fail("onnx: ", n.where(), ": scan inputs differ in length");
    length = d.value();
  }
  if (length > kMaxUnroll || length * body.node_size() > kMaxUnrolledNodes) n.unsupported("a Scan too long to unroll");
  std::vector<Value> carried;
  for (size_t k = 0; k < states; ++k) carried.push_back(n.value(k));
  std::vector<std::vector<Tensor>> scans(k_out);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Value> inputs = carried;
    for (size_t j = 0; j < m; ++j) {
      int64_t i = in_dirs[j] != 0 ? length - 1 - t : t;
      inputs.push_back(Value::of(xs[j].slice(axes[j], Expr(i), Expr(i + 1)).squeeze(axes[j]), n.onnx_type(states + j)));
    }
    std::vector<Value> out = n.importer().import_body(body, inputs, n.where());
    for (size_t k = 0; k < states; ++k) carried[k] = out[k];
    for (size_t k = 0; k < k_out; ++k) scans[k].push_back(n.importer().tensor(out[states + k], n.where() + " scan output"));
  }
  std::vector<Value> results = carried;
  for (size_t k = 0; k < k_out; ++k) {
    if (scans[k].empty()) n.unsupported("a Scan of length 0 with scan outputs");
    if (out_dirs[k] != 0) std::reverse(scans[k].begin(), scans[k].end());
    int axis = onnx_axis(n, out_axes[k], scans[k][0].rank() + 1, "scan_output_axes");
    results.push_back(single(ops::stack(scans[k], axis))[0]);
  }
  return results;
}

std::vector<Value> dropout(NodeContext& n) {
  n.attr_int("seed", 0);
  n.attr_float("ratio", 0.5);  // before opset 12 an attribute; inference ignores it
  if (n.has(2) && (!n.known(2) || n.ints(2).at(0) != 0)) n.unsupported("Dropout in training mode");
  Value x = n.value(0);
  std::vector<Value> out{x};
  Tensor t = n.in(0);
  out.push_back(single(ops::full(n.graph(), t.shape(), 1, DType::Bool))[0]);
  return out;
}

}  // namespace

void add_control_ops(OpTable& t) {
  t["Constant"] = constant;
  t["Identity"] = identity;
  t["Cast"] = cast;
  t["CastLike"] = cast_like;
  t["If"] = if_op;
  t["Loop"] = loop;
  t["Scan"] = scan;
  t["Dropout"] = dropout;
}

}  // namespace lumen::onnx
