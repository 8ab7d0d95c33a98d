#include "lumen/core/layout.h"

#include <algorithm>

#include "lumen/core/simplify.h"

namespace lumen {

namespace {

// How `x` reads its node: nothing when it is not one strided layer over every element (a
// broadcast, padding, a slice or a second layer), else its dims outermost first in memory.
std::optional<std::vector<int>> read_order(const Tensor& x) {
  const std::vector<ViewLayer>& layers = x.view().layers();
  if (layers.size() != 1 || !layers[0].mask.empty() || x.rank() < 2) return std::nullopt;
  const ViewLayer& l = layers[0];
  std::vector<int> wide;  // dims of extent above 1
  for (size_t d = 0; d < l.shape.size(); ++d) {
    if (!l.strides[d].is_const()) return std::nullopt;
    if (l.shape[d].is_const(1)) continue;
    if (l.strides[d].value() <= 0) return std::nullopt;
    wide.push_back(static_cast<int>(d));
  }
  if (!(simplify(shape_numel(l.shape)) == simplify(shape_numel(x.view().base_shape())))) return std::nullopt;
  std::vector<int> sorted = wide;
  auto stride = [&](int d) { return l.strides[static_cast<size_t>(d)].value(); };
  std::stable_sort(sorted.begin(), sorted.end(), [&](int a, int b) { return stride(a) > stride(b); });
  std::vector<int> order(l.shape.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int>(d);
  for (size_t k = 0; k < wide.size(); ++k) order[static_cast<size_t>(wide[k])] = sorted[k];
  return order;
}

bool is_identity(const std::vector<int>& order) {
  for (size_t d = 0; d < order.size(); ++d) {
    if (order[d] != static_cast<int>(d)) return false;
  }
  return true;
}

// Whether dims d and d + 1 of `x` read as one run: one stride-`inner` dim of the product's extent.
bool merges(const Tensor& x, size_t d) {
  const std::vector<ViewLayer>& layers = x.view().layers();
  if (layers.size() != 1 || !layers[0].mask.empty()) return false;
  const ViewLayer& l = layers[0];
  if (!l.strides[d].is_const() || !l.strides[d + 1].is_const() || !l.shape[d + 1].is_const()) return false;
  return l.strides[d].value() == l.strides[d + 1].value() * l.shape[d + 1].value();
}

std::vector<int> inverse_order(const std::vector<int>& order) {
  std::vector<int> inverse(order.size());
  for (size_t d = 0; d < order.size(); ++d) inverse[static_cast<size_t>(order[d])] = static_cast<int>(d);
  return inverse;
}

}  // namespace

std::optional<MemoryOrder> memory_order(const std::vector<Tensor>& operands) {
  std::optional<std::vector<int>> chosen;
  for (const Tensor& x : operands) {
    std::optional<std::vector<int>> order = read_order(x);
    if (!order) continue;
    if (is_identity(*order)) return std::nullopt;
    if (chosen && *chosen != *order) return std::nullopt;
    chosen = order;
  }
  if (!chosen) return std::nullopt;
  // Only a moved innermost dim changes how rows are read; outer permutations (attention's heads)
  // keep their logical order.
  const Shape& shape = operands[0].shape();
  int last = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!shape[d].is_const(1)) last = static_cast<int>(d);
  }
  if (last < 0 || (*chosen)[static_cast<size_t>(last)] == last) return std::nullopt;
  // An operand that walks the logical rows but is broadcast along the memory order's innermost
  // dim (a matrix-vector product's vector beside a transposed matrix: a product to be summed
  // along those rows) keeps the logical order too.
  const auto inner = static_cast<size_t>((*chosen)[static_cast<size_t>(last)]);
  for (const Tensor& x : operands) {
    const std::vector<ViewLayer>& layers = x.view().layers();
    if (layers.size() != 1) continue;
    const std::vector<Expr>& strides = layers[0].strides;
    if (!strides[static_cast<size_t>(last)].is_const(0) && strides[inner].is_const(0)) return std::nullopt;
  }
  MemoryOrder m;
  m.order = *chosen;
  std::vector<Tensor> permuted;
  for (const Tensor& x : operands) permuted.push_back(x.permute(m.order));
  m.permuted = permuted[0].shape();
  // An operand that, in this order, reads its node's buffer straight through: the op takes that
  // node's shape, so a producer fused into it keeps its own loops (a Winograd output tile's
  // [tiles, 2, tiles, 2, C], not positions whose tile indices are divided out of them).
  for (size_t i = 0; i < operands.size(); ++i) {
    const Shape& base = operands[i].view().base_shape();
    if (permuted[i].view().is_contiguous() && !base.empty() && simplify(base.back()) == simplify(m.permuted.back())) {
      m.merged = base;
      return m;
    }
  }
  // Runs every operand reads contiguously (or broadcasts whole) become one dim: one loop for
  // the positions of a channels-last image, as the convolution that made it had.
  m.merged = {m.permuted[0]};
  // The innermost dim stays a dim of its own (a contraction's columns, when one is fused in).
  for (size_t d = 0; d + 1 < m.permuted.size(); ++d) {
    bool all = d + 2 < m.permuted.size() &&
               std::all_of(permuted.begin(), permuted.end(), [&](const Tensor& x) { return merges(x, d); });
    if (all) {
      m.merged.back() = simplify(m.merged.back() * m.permuted[d + 1]);
    } else {
      m.merged.push_back(m.permuted[d + 1]);
    }
  }
  return m;
}

std::optional<Tensor> in_memory_order(const std::vector<Tensor>& operands,
                                      const std::function<Tensor(const std::vector<Tensor>&)>& op) {
  std::optional<MemoryOrder> m = memory_order(operands);
  if (!m) return std::nullopt;
  std::vector<Tensor> in_order;
  for (const Tensor& x : operands) in_order.push_back(x.permute(m->order).reshape(m->merged));
  return op(in_order).reshape(m->permuted).permute(inverse_order(m->order));
}

}  // namespace lumen
