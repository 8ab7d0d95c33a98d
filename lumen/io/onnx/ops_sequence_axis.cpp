// Per-batch operations along a sequence axis, with run-time lengths or
// positions: ReverseSequence (each batch entry's first len[b] steps reversed)
// and TensorScatter (a KV-cache write of `update` at write_indices[b],
// linear or circular). Both read through a Gather with per-element indices.
#include "lumen/core/error.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

// A [B] tensor viewed to broadcast against `shape` with B at `batch_axis`.
Tensor per_batch(const Tensor& v, const Shape& shape, int batch_axis) {
  Shape s(shape.size(), Expr(1));
  s[static_cast<size_t>(batch_axis)] = shape[static_cast<size_t>(batch_axis)];
  return v.reshape(s);
}

std::vector<Value> reverse_sequence(NodeContext& n) {
  Tensor x = n.in(0);
  if (x.rank() < 2) fail("onnx: ", n.where(), ": input ", to_string(x.shape()), " must have rank 2 or more");
  int batch = onnx_axis(n, n.attr_int("batch_axis", 1), x.rank(), "batch_axis");
  int time = onnx_axis(n, n.attr_int("time_axis", 0), x.rank(), "time_axis");
  if (batch == time || batch > 1 || time > 1) fail("onnx: ", n.where(), ": batch_axis and time_axis must be 0 and 1");
  Shape s = x.shape();
  Tensor len = per_batch(n.in(1).cast(DType::I64), s, batch);
  Tensor t = n.graph().iota(loop_index(s, static_cast<size_t>(time)), s, DType::I64);
  Tensor reversed = ops::sub(ops::sub(len, len.scalar(1)), t);
  Tensor idx = ops::where(ops::lt(t, len.expand(s)), reversed, t);
  return {Value::of(ops::gather(x, time, idx), n.onnx_type(0))};
}

std::vector<Value> tensor_scatter(NodeContext& n) {
  Tensor cache = n.in(0), update = n.in(1);
  std::string mode = n.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular") n.unsupported_attribute("mode", "'" + mode + "' is not linear or circular");
  int axis = onnx_axis(n, n.attr_int("axis", -2), cache.rank());
  if (axis == 0 || update.rank() != cache.rank()) fail("onnx: ", n.where(), ": cache ", to_string(cache.shape()), " and update ", to_string(update.shape()), " do not fit");
  Shape s = cache.shape();
  const Expr& max_len = s[static_cast<size_t>(axis)];
  const Expr& len = update.shape()[static_cast<size_t>(axis)];
  if (!max_len.is_const() || !len.is_const()) n.unsupported("TensorScatter over a dynamic sequence axis");
  Tensor p = n.graph().iota(loop_index(s, static_cast<size_t>(axis)), s, DType::I64);
  Tensor source = p;  // position p of the cache holds update step p - write_index[b]
  if (n.has(2)) source = ops::sub(p, per_batch(n.in(2).cast(DType::I64), s, 0));
  if (mode == "circular") source = ops::remainder(source, source.scalar(static_cast<double>(max_len.value())));
  Tensor valid = ops::logical_and(ops::ge(source, source.scalar(0)), ops::lt(source, source.scalar(static_cast<double>(len.value()))));
  Tensor idx = ops::clamp(source, 0.0, static_cast<double>(len.value() - 1));
  Shape spread = s;
  spread[static_cast<size_t>(axis)] = len;
  Tensor written = ops::gather(update.expand(spread), axis, idx);
  return {Value::of(ops::where(valid, written, cache), n.onnx_type(0))};
}

}  // namespace

void add_sequence_axis_ops(OpTable& t) {
  t["ReverseSequence"] = reverse_sequence;
  t["TensorScatter"] = tensor_scatter;
}

}  // namespace lumen::onnx
