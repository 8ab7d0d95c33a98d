// Shape and layout ops (views, free) and the data-dependent reads built on
// Gather. Known integer values (shape computations) are folded at import.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

bool foldable(NodeContext& n, size_t i) {
  if (!n.known(i)) return false;
  Value& v = n.value(i);
  return !v.is_float() && !v.host && !v.tensor.defined();
}

std::vector<int64_t> dims_of(const std::vector<Expr>& shape, NodeContext& n) {
  std::vector<int64_t> out;
  for (const Expr& d : shape) {
    if (!d.is_const()) fail("onnx: ", n.where(), ": a known value with a dynamic dim");
    out.push_back(d.value());
  }
  return out;
}

Value with_type(NodeContext& n, const Tensor& t, size_t like = 0) { return Value::of(t, n.onnx_type(like)); }

std::vector<Value> reshape(NodeContext& n) {
  std::vector<Expr> target = n.exprs(1);
  bool allow_zero = n.attr_int("allowzero", 0) != 0;
  Value& x = n.value(0);
  Shape in = x.tensor.defined() ? x.tensor.shape() : x.shape;
  Shape s;
  int infer = -1;
  for (size_t d = 0; d < target.size(); ++d) {
    Expr e = target[d];
    if (e.is_const(0) && !allow_zero) {
      if (d >= in.size()) fail("onnx: ", n.where(), ": shape entry ", d, " is 0 but the input has rank ", in.size());
      e = in[d];
    }
    if (e.is_const(-1)) infer = static_cast<int>(d);
    s.push_back(e);
  }
  if (infer >= 0) {
    Expr total(1), known(1);
    for (const Expr& d : in) total = total * d;
    for (size_t d = 0; d < s.size(); ++d) {
      if (static_cast<int>(d) != infer) known = known * s[d];
    }
    s[static_cast<size_t>(infer)] = simplify(total / known);
  }
  if (foldable(n, 0)) {
    Value out = x;
    out.shape = s;
    out.tensor = Tensor();
    if (out.numel() != static_cast<int64_t>(x.ints.size())) {
      fail("onnx: ", n.where(), ": cannot reshape ", x.ints.size(), " elements to ", to_string(s));
    }
    return {out};
  }
  return {with_type(n, n.in(0).reshape(s))};
}

std::vector<Value> transpose(NodeContext& n) {
  Tensor x = n.in(0);
  std::vector<int64_t> perm = n.attr_ints("perm");
  std::vector<int> order;
  for (size_t k = 0; k < x.rank(); ++k) order.push_back(static_cast<int>(perm.empty() ? x.rank() - 1 - k : 0));
  for (size_t k = 0; k < perm.size(); ++k) order[k] = onnx_axis(n, perm[k], x.rank(), "perm");
  return {with_type(n, ops::permute(x, order))};
}

// Axes from input 1 (opset 13) or the `axes` attribute.
std::vector<int64_t> axes_input(NodeContext& n, size_t i) {
  if (n.has(i)) return n.ints(i);
  return n.attr_ints("axes");
}

Shape shape_of(NodeContext& n, size_t i) {
  Value& v = n.value(i);
  return v.tensor.defined() ? v.tensor.shape() : v.shape;
}

Value reshaped(NodeContext& n, const Shape& s) {
  if (foldable(n, 0)) {
    Value out = n.value(0);
    out.shape = s;
    return out;
  }
  return with_type(n, n.in(0).reshape(s));
}

std::vector<Value> squeeze(NodeContext& n) {
  Shape in = shape_of(n, 0);
  std::vector<int64_t> axes = axes_input(n, 1);
  std::vector<bool> drop(in.size(), false);
  if (axes.empty()) {
    for (size_t d = 0; d < in.size(); ++d) drop[d] = in[d].is_const(1);
  }
  for (int64_t a : axes) {
    int d = onnx_axis(n, a, in.size(), "axes");
    if (!in[static_cast<size_t>(d)].is_const(1)) fail("onnx: ", n.where(), ": axis ", a, " of shape ", to_string(in), " is not 1");
    drop[static_cast<size_t>(d)] = true;
  }
  Shape s;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!drop[d]) s.push_back(in[d]);
  }
  return {reshaped(n, s)};
}

std::vector<Value> unsqueeze(NodeContext& n) {
  Shape in = shape_of(n, 0);
  std::vector<int64_t> axes = axes_input(n, 1);
  size_t rank = in.size() + axes.size();
  std::vector<bool> is_new(rank, false);
  for (int64_t a : axes) is_new[static_cast<size_t>(onnx_axis(n, a, rank, "axes"))] = true;
  Shape s;
  size_t k = 0;
  for (size_t d = 0; d < rank; ++d) s.push_back(is_new[d] ? Expr(1) : in[k++]);
  return {reshaped(n, s)};
}

std::vector<Value> flatten(NodeContext& n) {
  Shape in = shape_of(n, 0);
  int64_t axis = n.attr_int("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(in.size());
  if (axis < 0 || axis > static_cast<int64_t>(in.size())) fail("onnx: ", n.where(), ": axis out of range for ", to_string(in));
  Expr a(1), b(1);
  for (size_t d = 0; d < in.size(); ++d) {
    if (static_cast<int64_t>(d) < axis) {
      a = a * in[d];
    } else {
      b = b * in[d];
    }
  }
  return {reshaped(n, {simplify(a), simplify(b)})};
}

std::vector<Value> concat(NodeContext& n) {
  bool all_known = true;
  for (size_t k = 0; k < n.num_inputs(); ++k) all_known = all_known && n.has(k) && foldable(n, k) && shape_of(n, k).size() == 1;
  if (all_known) {
    std::vector<Expr> out;
    for (size_t k = 0; k < n.num_inputs(); ++k) {
      const auto& v = n.value(k).ints;
      out.insert(out.end(), v.begin(), v.end());
    }
    n.attr_int("axis");
    return {Value::of_ints(out, {static_cast<int64_t>(out.size())}, n.onnx_type(0))};
  }
  std::vector<Tensor> parts;
  for (size_t k = 0; k < n.num_inputs(); ++k) {
    if (n.has(k)) parts.push_back(n.in(k));
  }
  int axis = onnx_axis(n, n.attr_int("axis"), parts.at(0).rank());
  std::vector<Tensor> nonempty;
  for (const Tensor& p : parts) {
    if (!p.shape()[static_cast<size_t>(axis)].is_const(0)) nonempty.push_back(p);
  }
  if (nonempty.empty()) nonempty.push_back(parts[0]);
  return {with_type(n, nonempty.size() == 1 ? nonempty[0] : ops::concat(nonempty, axis))};
}

std::vector<Value> split(NodeContext& n) {
  Shape in = shape_of(n, 0);
  int axis = onnx_axis(n, n.attr_int("axis", 0), in.size());
  int64_t outputs = static_cast<int64_t>(n.num_outputs());
  std::vector<int64_t> sizes;
  if (n.has(1)) {
    sizes = n.ints(1);
  } else if (n.has_attr("split")) {  // before opset 13
    sizes = n.attr_ints("split");
  } else {
    int64_t count = n.attr_int("num_outputs", outputs);
    const Expr& dim = in[static_cast<size_t>(axis)];
    if (!dim.is_const()) n.unsupported("Split of a dynamic dim");
    int64_t each = (dim.value() + count - 1) / count;
    for (int64_t k = 0; k < count; ++k) sizes.push_back(std::max<int64_t>(0, std::min(each, dim.value() - k * each)));
  }
  std::vector<Value> out;
  int64_t begin = 0;
  if (foldable(n, 0) && in.size() == 1) {  // a known 1-D value (a shape): its pieces stay known
    const std::vector<Expr>& data = n.value(0).ints;
    for (int64_t s : sizes) {
      if (begin + s > static_cast<int64_t>(data.size())) fail("onnx: ", n.where(), ": split sizes exceed ", data.size(), " elements");
      out.push_back(Value::of_ints(std::vector<Expr>(data.begin() + begin, data.begin() + begin + s), {s}, n.onnx_type(0)));
      begin += s;
    }
    return out;
  }
  Tensor x = n.in(0);
  for (int64_t s : sizes) {
    out.push_back(with_type(n, x.slice(axis, Expr(begin), Expr(begin + s))));
    begin += s;
  }
  return out;
}

// One axis of an ONNX Slice, on a concrete or dynamic dim.
Tensor slice_axis(NodeContext& n, const Tensor& x, int axis, Expr start, Expr end, int64_t step) {
  const Expr dim = x.shape()[static_cast<size_t>(axis)];
  if (step == 0) fail("onnx: ", n.where(), ": a step of 0");
  auto normalise = [&](Expr v) {
    if (v.is_const() && v.value() < 0) return simplify(v + dim);
    return v;
  };
  if (step > 0) {
    Expr s = simplify(min(max(normalise(start), Expr(0)), dim));
    Expr e = simplify(min(max(normalise(end), Expr(0)), dim));
    e = simplify(max(e, s));
    return x.slice(axis, s, e, step);
  }
  if (!dim.is_const()) n.unsupported("a negative step over a dynamic dim");
  int64_t d = dim.value();
  if (!start.is_const() || !end.is_const()) n.unsupported("a negative step with dynamic bounds");
  int64_t s = start.value() < 0 ? start.value() + d : start.value();
  int64_t e = end.value() < 0 ? (end.value() <= std::numeric_limits<int64_t>::min() / 2 ? -1 : end.value() + d) : end.value();
  s = std::clamp<int64_t>(s, 0, d - 1);
  e = std::clamp<int64_t>(e, -1, d - 1);
  // Flipped: index i becomes d - 1 - i, and the step positive.
  int64_t fs = d - 1 - s, fe = d - 1 - e;
  if (fe < fs) fe = fs;
  return x.flip(axis).slice(axis, Expr(fs), Expr(fe), -step);
}

std::vector<Value> slice(NodeContext& n) {
  std::vector<Expr> starts = n.exprs(1), ends = n.exprs(2);
  std::vector<int64_t> axes = n.has(3) ? n.ints(3) : std::vector<int64_t>{};
  std::vector<int64_t> steps = n.has(4) ? n.ints(4) : std::vector<int64_t>{};
  if (foldable(n, 0) && shape_of(n, 0).size() == 1 && starts.size() == 1) {
    const std::vector<Expr>& data = n.value(0).ints;
    int64_t d = static_cast<int64_t>(data.size()), step = steps.empty() ? 1 : steps[0];
    if (starts[0].is_const() && ends[0].is_const() && step > 0) {
      int64_t s = starts[0].value(), e = ends[0].value();
      if (s < 0) s += d;
      if (e < 0) e += d;
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      std::vector<Expr> out;
      for (int64_t k = s; k < e; k += step) out.push_back(data[static_cast<size_t>(k)]);
      return {Value::of_ints(out, {static_cast<int64_t>(out.size())}, n.onnx_type(0))};
    }
  }
  Tensor x = n.in(0);
  if (starts.size() != ends.size()) fail("onnx: ", n.where(), ": starts and ends differ in length");
  for (size_t k = 0; k < starts.size(); ++k) {
    int axis = axes.empty() ? static_cast<int>(k) : onnx_axis(n, axes.at(k), x.rank(), "axes");
    x = slice_axis(n, x, axis, starts[k], ends[k], steps.empty() ? 1 : steps.at(k));
  }
  return {with_type(n, x)};
}

std::vector<Value> expand(NodeContext& n) {
  Tensor x = n.in(0);
  std::vector<Expr> target = n.exprs(1);
  Shape s = broadcast_shapes(x.shape(), Shape(target.begin(), target.end()), "Expand");
  return {with_type(n, ops::broadcast_to(x, s))};
}

std::vector<Value> tile(NodeContext& n) { return {with_type(n, ops::tile(n.in(0), n.ints(1)))}; }

std::vector<Value> pad(NodeContext& n) {
  Tensor x = n.in(0);
  std::string mode = n.attr_string("mode", "constant");
  std::vector<int64_t> pads = n.ints(1);
  double value = 0;
  std::optional<Tensor> run_time_value;  // a constant_value fed at run time
  if (n.has(2) && n.known(2)) value = n.reals(2).at(0);
  if (n.has(2) && !n.known(2)) run_time_value = n.in(2);
  std::vector<int64_t> axes;
  if (n.has(3)) {
    for (int64_t a : n.ints(3)) axes.push_back(onnx_axis(n, a, x.rank(), "axes"));
  } else {
    for (size_t d = 0; d < x.rank(); ++d) axes.push_back(static_cast<int64_t>(d));
  }
  if (pads.size() != 2 * axes.size()) fail("onnx: ", n.where(), ": pads has ", pads.size(), " entries for ", axes.size(), " axes");
  // lumen's pad lists (before, after) from the last dim backwards.
  std::vector<int64_t> torch_pads(2 * x.rank(), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    size_t from_end = x.rank() - 1 - static_cast<size_t>(axes[k]);
    torch_pads[2 * from_end] = pads[k];
    torch_pads[2 * from_end + 1] = pads[k + axes.size()];
  }
  std::string lumen_mode = mode == "edge" ? "replicate" : mode;
  if (lumen_mode != "constant" && lumen_mode != "reflect" && lumen_mode != "replicate") {
    n.unsupported_attribute("mode", "'" + mode + "' is not supported (constant, reflect, edge)");
  }
  if (run_time_value && lumen_mode == "constant") {
    Tensor padded = ops::pad(x, torch_pads, "constant", 0);
    Tensor inside = ops::pad(ops::ones(n.graph(), x.shape(), DType::Bool), torch_pads, "constant", 0);
    Tensor fill = run_time_value->cast(x.dtype()).reshape({}).expand(padded.shape());
    return {with_type(n, ops::where(inside, padded, fill))};
  }
  return {with_type(n, ops::pad(x, torch_pads, lumen_mode, value))};
}

// Crops (centred, extra element at the end) or zero-pads (extra at the end) each axis to the target size.
std::vector<Value> center_crop_pad(NodeContext& n) {
  Tensor x = n.in(0);
  std::vector<int64_t> target = n.ints(1);
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (axes.empty()) {
    for (size_t d = 0; d < x.rank(); ++d) axes.push_back(static_cast<int64_t>(d));
  }
  if (axes.size() != target.size()) fail("onnx: ", n.where(), ": shape has ", target.size(), " entries for ", axes.size(), " axes");
  for (size_t k = 0; k < axes.size(); ++k) {
    int axis = onnx_axis(n, axes[k], x.rank(), "axes");
    const Expr& dim = x.shape()[static_cast<size_t>(axis)];
    if (!dim.is_const()) n.unsupported("CenterCropPad of a dynamic dim");
    int64_t d = dim.value(), t = target[k];
    if (t < d) {
      int64_t begin = (d - t) / 2;
      x = x.slice(axis, Expr(begin), Expr(begin + t));
    } else if (t > d) {
      std::vector<int64_t> pads(2 * x.rank(), 0);
      size_t from_end = x.rank() - 1 - static_cast<size_t>(axis);
      pads[2 * from_end] = (t - d) / 2;
      pads[2 * from_end + 1] = t - d - (t - d) / 2;
      x = ops::pad(x, pads, "constant", 0);
    }
  }
  return {with_type(n, x)};
}

// Negative indices count from the end of `dim`. int64 indices stay I64 (a
// value past 2^31 must not wrap into range); 8-bit ones compute in i32.
Tensor wrap_indices(const Tensor& idx, const Expr& dim) {
  Tensor i = idx.dtype() == DType::I32 || idx.dtype() == DType::I64 ? idx : idx.cast(DType::I32);
  if (!dim.is_const()) return i;
  return ops::where(ops::lt(i, i.scalar(0)), ops::add(i, i.scalar(static_cast<double>(dim.value()))), i);
}

std::vector<Value> gather(NodeContext& n) {
  int64_t axis_attr = n.attr_int("axis", 0);
  if (foldable(n, 0) && foldable(n, 1) && shape_of(n, 0).size() == 1) {
    const std::vector<Expr>& data = n.value(0).ints;
    std::vector<Expr> out;
    for (int64_t i : n.ints(1)) {
      int64_t k = i < 0 ? i + static_cast<int64_t>(data.size()) : i;
      if (k < 0 || k >= static_cast<int64_t>(data.size())) fail("onnx: ", n.where(), ": index ", i, " out of range");
      out.push_back(data[static_cast<size_t>(k)]);
    }
    return {Value::of_ints(out, dims_of(shape_of(n, 1), n), n.onnx_type(0))};
  }
  Tensor x = n.in(0);
  int axis = onnx_axis(n, axis_attr, x.rank());
  Tensor idx = wrap_indices(n.in(1), x.shape()[static_cast<size_t>(axis)]);
  return {with_type(n, x.gather(idx, axis))};
}

std::vector<Value> gather_elements(NodeContext& n) {
  Tensor x = n.in(0);
  int axis = onnx_axis(n, n.attr_int("axis", 0), x.rank());
  Tensor idx = wrap_indices(n.in(1), x.shape()[static_cast<size_t>(axis)]);
  return {with_type(n, ops::gather(x, axis, idx))};
}

// ScatterElements as a composition: each output position along `axis` takes
// the updates whose index names it (a match over an extra dim), else data.
std::vector<Value> scatter_elements(NodeContext& n) {
  Tensor data = n.in(0), updates = n.in(2);
  int axis = onnx_axis(n, n.attr_int("axis", 0), data.rank());
  std::string reduction = n.attr_string("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min") {
    n.unsupported_attribute("reduction", "'" + reduction + "' is not supported");
  }
  const Expr& target = data.shape()[static_cast<size_t>(axis)];
  Tensor idx = wrap_indices(n.in(1), target);
  for (size_t d = 0; d < data.rank(); ++d) {
    if (static_cast<int>(d) != axis && !(data.shape()[d] == idx.shape()[d])) {
      n.unsupported("indices smaller than data outside the scatter axis");
    }
  }
  // match[..., m, ..., j] = indices[..., m, ...] == j, with j a new last dim.
  Shape s = idx.shape();
  s.push_back(target);
  Tensor j = n.graph().iota(loop_index(s, s.size() - 1), s, DType::I32);
  Tensor match = ops::eq(idx.unsqueeze(static_cast<int>(idx.rank())), j);
  Tensor upd = updates.unsqueeze(static_cast<int>(updates.rank())).expand(s);
  Tensor hit = ops::any(match, {axis});
  Tensor picked;
  if (reduction == "max" || reduction == "min") {
    Tensor masked = ops::where(match, upd, reduction == "max" ? upd.scalar(-INFINITY) : upd.scalar(INFINITY));
    picked = reduction == "max" ? ops::amax(masked, {axis}) : ops::amin(masked, {axis});
  } else if (reduction == "mul") {
    picked = ops::prod(ops::where(match, upd, ops::ones_like(upd)), {axis});
  } else {
    picked = ops::sum(ops::where(match, upd, ops::zeros_like(upd)), {axis});
  }
  // Back to data's layout: the new last dim is the scatter axis.
  std::vector<int> order;
  for (int d = 0; d < static_cast<int>(data.rank()); ++d) order.push_back(d == axis ? static_cast<int>(data.rank()) - 1 : d < axis ? d : d - 1);
  picked = ops::permute(picked, order);
  hit = ops::permute(hit, order);
  Tensor base = data;
  if (reduction == "add") picked = ops::add(picked, data);
  if (reduction == "mul") picked = ops::mul(picked, data);
  if (reduction == "max") picked = ops::maximum(picked, data);
  if (reduction == "min") picked = ops::minimum(picked, data);
  return {with_type(n, ops::where(hit, picked.cast(data.dtype()), base))};
}

// ScatterND: data viewed as [P, R] (P positions named by the k index
// components, R the rest); each update row lands where its linear index
// matches (a match over [N, P]); none / add / max / min.
std::vector<Value> scatter_nd(NodeContext& n) {
  Tensor data = n.in(0), indices = n.in(1), updates = n.in(2);
  std::string reduction = n.attr_string("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min") {
    n.unsupported_attribute("reduction", "'" + reduction + "' is not supported");
  }
  const Expr& kd = indices.shape().back();
  if (!kd.is_const() || kd.value() < 1 || static_cast<size_t>(kd.value()) > data.rank()) {
    fail("onnx: ", n.where(), ": indices ", to_string(indices.shape()), " do not fit data ", to_string(data.shape()));
  }
  size_t k = static_cast<size_t>(kd.value());
  int64_t positions = 1, rest = 1;
  std::vector<int64_t> stride(k, 1);
  for (size_t d = 0; d < data.rank(); ++d) {
    if (!data.shape()[d].is_const()) n.unsupported("ScatterND over dynamic dims");
    (d < k ? positions : rest) *= data.shape()[d].value();
  }
  for (size_t d = k - 1; d-- > 0;) stride[d] = stride[d + 1] * data.shape()[d + 1].value();
  Expr rows(1);
  for (size_t d = 0; d + 1 < indices.rank(); ++d) rows = rows * indices.shape()[d];
  rows = simplify(rows);
  Tensor flat_idx = indices.reshape({rows, Expr(static_cast<int64_t>(k))});
  Tensor linear;
  for (size_t d = 0; d < k; ++d) {
    Tensor component = wrap_indices(flat_idx.slice(1, Expr(static_cast<int64_t>(d)), Expr(static_cast<int64_t>(d + 1))).squeeze(1),
                                    data.shape()[d]);
    Tensor term = component * static_cast<double>(stride[d]);
    linear = linear.defined() ? ops::add(linear, term) : term;
  }
  Shape match_shape{rows, Expr(positions)};
  Tensor p = n.graph().iota(loop_index(match_shape, 1), match_shape, DType::I32);
  Tensor match = ops::eq(linear.unsqueeze(1), p);  // [N, P]
  Tensor upd = updates.reshape({rows, Expr(rest)});
  Tensor flat = data.reshape({Expr(positions), Expr(rest)});
  Tensor hit = ops::any(match, {0}).unsqueeze(1);  // [P, 1]
  Tensor picked;
  if (reduction == "max" || reduction == "min") {
    Tensor spread = upd.unsqueeze(1).expand({rows, Expr(positions), Expr(rest)});
    Tensor fill = spread.scalar(reduction == "max" ? -INFINITY : INFINITY);
    Tensor masked = ops::where(match.unsqueeze(2), spread, fill);
    picked = reduction == "max" ? ops::maximum(ops::amax(masked, {0}), flat) : ops::minimum(ops::amin(masked, {0}), flat);
  } else if (reduction == "mul") {
    Tensor spread = upd.unsqueeze(1).expand({rows, Expr(positions), Expr(rest)});
    picked = ops::mul(ops::prod(ops::where(match.unsqueeze(2), spread, ops::ones_like(spread)), {0}), flat);
  } else {
    Tensor f = is_float(upd.dtype()) ? upd : upd.cast(DType::F32);
    picked = ops::matmul(match.cast(f.dtype()).transpose(0, 1), f);  // [P, R]
    if (reduction == "add") picked = ops::add(picked, flat.cast(picked.dtype()));
  }
  Tensor out = ops::where(hit, picked.cast(data.dtype()), flat);
  return {with_type(n, out.reshape(data.shape()))};
}

// Compress: the slices along `axis` (or of the flattened input) whose
// condition is true; the condition must be known at import (it sets the shape).
std::vector<Value> compress(NodeContext& n) {
  Tensor x = n.in(0);
  std::vector<int64_t> condition = n.ints(1);
  if (!n.has_attr("axis")) x = x.reshape({Expr(-1)});
  int axis = n.has_attr("axis") ? onnx_axis(n, n.attr_int("axis", 0), x.rank()) : 0;
  const Expr& dim = x.shape()[static_cast<size_t>(axis)];
  if (!dim.is_const()) n.unsupported("Compress along a dynamic dim");
  std::vector<Expr> kept;
  for (size_t k = 0; k < condition.size() && static_cast<int64_t>(k) < dim.value(); ++k) {
    if (condition[k] != 0) kept.push_back(Expr(static_cast<int64_t>(k)));
  }
  if (kept.empty()) n.unsupported("a Compress that keeps nothing (an empty result)");
  Value idx = Value::of_ints(kept, {static_cast<int64_t>(kept.size())}, kInt64);
  return {with_type(n, x.gather(n.importer().tensor(idx, n.where() + " kept indices"), axis))};
}

std::vector<Value> depth_to_space(NodeContext& n) {
  Tensor x = n.in(0);
  int64_t b = n.attr_int("blocksize");
  std::string mode = n.attr_string("mode", "DCR");
  if (x.rank() != 4) n.unsupported("an input that is not 4-D");
  Shape s = x.shape();
  Expr c = simplify(s[1] / Expr(b * b));
  Tensor y = mode == "DCR" ? x.reshape({s[0], Expr(b), Expr(b), c, s[2], s[3]}).permute({0, 3, 4, 1, 5, 2})
                           : x.reshape({s[0], c, Expr(b), Expr(b), s[2], s[3]}).permute({0, 1, 4, 2, 5, 3});
  return {with_type(n, y.reshape({s[0], c, simplify(s[2] * b), simplify(s[3] * b)}))};
}

std::vector<Value> space_to_depth(NodeContext& n) {
  Tensor x = n.in(0);
  int64_t b = n.attr_int("blocksize");
  std::string mode = n.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") n.unsupported_attribute("mode", "'" + mode + "' is not DCR or CRD");
  if (x.rank() != 4) n.unsupported("an input that is not 4-D");
  Shape s = x.shape();
  Expr h = simplify(s[2] / Expr(b)), w = simplify(s[3] / Expr(b));
  Tensor blocks = x.reshape({s[0], s[1], h, Expr(b), w, Expr(b)});
  // DCR: the block offsets outermost in the channels; CRD: the input channel outermost.
  Tensor y = mode == "DCR" ? blocks.permute({0, 3, 5, 1, 2, 4}) : blocks.permute({0, 1, 3, 5, 2, 4});
  return {with_type(n, y.reshape({s[0], simplify(s[1] * Expr(b * b)), h, w}))};
}

}  // namespace

void add_movement_ops(OpTable& t) {
  t["Reshape"] = reshape;
  t["Transpose"] = transpose;
  t["Squeeze"] = squeeze;
  t["Unsqueeze"] = unsqueeze;
  t["Flatten"] = flatten;
  t["Concat"] = concat;
  t["Split"] = split;
  t["Slice"] = slice;
  t["Expand"] = expand;
  t["Tile"] = tile;
  t["Pad"] = pad;
  t["Gather"] = gather;
  t["GatherElements"] = gather_elements;
  t["ScatterElements"] = scatter_elements;
  t["CenterCropPad"] = center_crop_pad;
  t["ScatterND"] = scatter_nd;
  t["DepthToSpace"] = depth_to_space;
  t["SpaceToDepth"] = space_to_depth;
  t["Compress"] = compress;
}

}  // namespace lumen::onnx
