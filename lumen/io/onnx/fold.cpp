#include "lumen/io/onnx/fold.h"

#include "lumen/core/error.h"

namespace lumen::onnx {

std::optional<Value> fold_binary(NodeContext& n, size_t ia, size_t ib, const std::function<Expr(Expr, Expr)>& f,
                                 int onnx_type) {
  if (!n.known(ia) || !n.known(ib)) return std::nullopt;
  Value& a = n.value(ia);
  Value& b = n.value(ib);
  if (a.is_float() || b.is_float() || a.host || b.host) return std::nullopt;
  std::vector<int64_t> sa = a.concrete_shape(n.where()), sb = b.concrete_shape(n.where());
  size_t rank = std::max(sa.size(), sb.size());
  sa.insert(sa.begin(), rank - sa.size(), 1);
  sb.insert(sb.begin(), rank - sb.size(), 1);
  std::vector<int64_t> out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (sa[d] != sb[d] && sa[d] != 1 && sb[d] != 1) {
      fail("onnx: ", n.where(), ": shapes ", shape_string(sa), " and ", shape_string(sb), " do not broadcast");
    }
    out[d] = sa[d] == 1 ? sb[d] : sa[d];
  }
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  if (total > kKnownLimit) return std::nullopt;
  std::vector<Expr> values;
  for (int64_t k = 0; k < total; ++k) {
    int64_t rest = k, offset_a = 0, offset_b = 0, stride_a = 1, stride_b = 1;
    for (size_t d = rank; d-- > 0;) {
      int64_t i = rest % out[d];
      rest /= out[d];
      if (sa[d] != 1) offset_a += i * stride_a;
      if (sb[d] != 1) offset_b += i * stride_b;
      stride_a *= sa[d];
      stride_b *= sb[d];
    }
    values.push_back(f(a.ints[static_cast<size_t>(offset_a)], b.ints[static_cast<size_t>(offset_b)]));
  }
  return Value::of_ints(values, out, onnx_type);
}

}  // namespace lumen::onnx
