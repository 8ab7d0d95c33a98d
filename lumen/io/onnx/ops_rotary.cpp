// RotaryEmbedding (opset 23): rotates the first rotary_embedding_dim
// features of each head by position-dependent angles (halves or interleaved
// pairs), with the cos/sin caches gathered by position_ids when given.
#include "lumen/core/error.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

std::vector<Value> rotary_embedding(NodeContext& n) {
  Tensor x = n.in(0);
  bool interleaved = n.attr_int("interleaved", 0) != 0;
  int64_t heads = n.attr_int("num_heads", 0);
  int64_t rotary = n.attr_int("rotary_embedding_dim", 0);
  Shape original = x.shape();
  // To [batch, seq, heads, head_size].
  Tensor h;
  if (x.rank() == 4) {
    h = x.permute({0, 2, 1, 3});
  } else if (x.rank() == 3 && heads > 0) {
    h = x.reshape({original[0], original[1], Expr(heads), Expr(-1)});
  } else {
    fail("onnx: ", n.where(), ": X ", to_string(original), " must be 4-D, or 3-D with num_heads");
  }
  const Expr& head = h.shape()[3];
  if (!head.is_const()) n.unsupported("a dynamic head size");
  if (rotary == 0) rotary = head.value();
  Tensor cos = n.in(1), sin = n.in(2);
  if (std::optional<Tensor> ids = n.optional(3)) {  // caches [max_position, rotary / 2] -> [batch, seq, rotary / 2]
    Tensor i = ids->cast(DType::I32);
    cos = cos.gather(i, 0);
    sin = sin.gather(i, 0);
  }
  cos = cos.unsqueeze(2).cast(h.dtype());  // [batch, seq, 1, rotary / 2]
  sin = sin.unsqueeze(2).cast(h.dtype());
  Tensor rot = h.slice(3, Expr(0), Expr(rotary));
  int64_t half = rotary / 2;
  Tensor x1, x2;
  if (interleaved) {
    Tensor pairs = rot.reshape({h.shape()[0], h.shape()[1], h.shape()[2], Expr(half), Expr(2)});
    x1 = pairs.slice(4, Expr(0), Expr(1)).squeeze(4);
    x2 = pairs.slice(4, Expr(1), Expr(2)).squeeze(4);
  } else {
    x1 = rot.slice(3, Expr(0), Expr(half));
    x2 = rot.slice(3, Expr(half), Expr(rotary));
  }
  Tensor r1 = ops::sub(ops::mul(x1, cos), ops::mul(x2, sin));
  Tensor r2 = ops::add(ops::mul(x2, cos), ops::mul(x1, sin));
  Tensor rotated = interleaved ? ops::stack({r1, r2}, 4).reshape({h.shape()[0], h.shape()[1], h.shape()[2], Expr(rotary)})
                               : ops::concat({r1, r2}, 3);
  Tensor out = rotary == head.value() ? rotated : ops::concat({rotated, h.slice(3, Expr(rotary), head)}, 3);
  out = x.rank() == 4 ? out.permute({0, 2, 1, 3}) : out.reshape(original);
  return {Value::of(out, n.onnx_type(0))};
}

}  // namespace

void add_rotary_ops(OpTable& t) { t["RotaryEmbedding"] = rotary_embedding; }

}  // namespace lumen::onnx
