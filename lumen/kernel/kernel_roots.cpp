#include "lumen/kernel/kernel_roots.h"

#include "lumen/core/simplify.h"
#include "lumen/kernel/lower.h"
#include "lumen/kernel/two_place_gather.h"

namespace lumen::kernel {

namespace {

// Whether `e` reads, at each point of its consumer (of shape `consumer`), the
// producer's point at the same flat position: a plain edge, a reshape, or a
// permutation of size-1 dims (an ONNX export's [197, 1, 768] -> [1, 197, 768]
// around a projection). An epilogue through such an edge computes the
// producer's points in its own order, so a register tile still applies.
bool reads_in_order(const Edge& e, const Shape& consumer, const Shape& producer) {
  if (e.view.is_contiguous() && consumer == producer) return true;
  if (e.view.has_mask() || !(e.view.shape() == consumer)) return false;
  if (!(shape_numel(consumer) == shape_numel(producer))) return false;
  std::vector<Expr> at = loop_indices(consumer);
  View::Index i = e.view.index(at);
  return i.valid.is_const(1) && simplify(i.index) == simplify(flat_index(consumer, at));
}

// A small reduction written out inline (a max over a stacked pair: a ReLU, a clamp) as an
// epilogue: the values it reads at each of its points, one per reduced index, where the stack
// reads one of them at that same point (the others are the padding of the stack, or constants).
// `next(producer)` continues the walk from each such producer; the first it finds is returned.
template <typename Next>
NodeId through_small_reduce(const Graph& graph, NodeId node, const std::vector<bool>& materialized, Next&& next) {
  const Node& n = graph.node(node);
  const Edge& in = n.inputs[0];
  const Node& stack = graph.node(in.node);
  if (materialized[static_cast<size_t>(in.node)] || !is_elementwise(stack.op)) return -1;
  if (!in.view.is_contiguous() || !(stack.shape == in.view.shape())) return -1;
  std::vector<Expr> at = loop_indices(n.shape);
  Expr flat = simplify(flat_index(n.shape, at));
  int64_t extent = in.view.shape()[static_cast<size_t>(n.axis)].value();
  for (const Edge& e : stack.inputs) {
    if (materialized[static_cast<size_t>(e.node)]) continue;
    if (!(shape_numel(graph.node(e.node).shape) == shape_numel(n.shape))) continue;
    bool reads = false, in_order = true;
    for (int64_t k = 0; k < extent && in_order; ++k) {
      std::vector<Expr> point = at;
      point.insert(point.begin() + n.axis, Expr(k));
      View::Index i = e.view.index(point);
      Expr valid = simplify(i.valid);
      if (valid.is_const(0)) continue;
      in_order = valid.is_const(1) && simplify(i.index) == flat;
      reads = true;
    }
    if (!reads || !in_order) continue;
    NodeId found = next(e.node);
    if (found >= 0) return found;
  }
  return -1;
}

// The first node satisfying `wanted` that a kernel for `node` computes at its
// output points: the node itself, or one reached through inlined elementwise
// consumers with the same shape (an epilogue such as a bias and an
// activation). -1 if there is none.
// `reordered`: whether the epilogue may read through a reshape (a register
// tile computes the same points in any flat order); otherwise only through
// plain edges of the same shape (an rfactor's partial sums are laid out by
// the reduction's own coordinates).
template <typename Wanted>
NodeId through_epilogue(const Graph& graph, NodeId node, const std::vector<bool>& materialized, bool reordered,
                        Wanted&& wanted) {
  const Node& n = graph.node(node);
  // A ReLU or a clamp written out inline (a small max over a stacked pair) ends the epilogue of
  // a register tile too (mobilenet_v3_small's ReLU-ended 1 x 1 convs over 28 x 28 maps); an
  // rfactor's partial sums (not `reordered`) are cut at their own reduction only.
  if (is_reduce(n.op) && is_small_reduce(n) && reordered) {
    return through_small_reduce(graph, node, materialized, [&](NodeId in) {
      return through_epilogue(graph, in, materialized, reordered, wanted);
    });
  }
  if (is_reduce(n.op)) return !is_small_reduce(n) && wanted(node) ? node : -1;
  if (n.op == Op::Gather) {  // where(c, a, b): a select epilogue of a or b
    for (NodeId source : two_place_sources(graph, node, materialized)) {
      if (materialized[static_cast<size_t>(source)]) continue;
      NodeId found = through_epilogue(graph, source, materialized, reordered, wanted);
      if (found >= 0) return found;
    }
    return -1;
  }
  if (!is_elementwise(n.op)) return -1;
  for (const Edge& e : n.inputs) {
    if (materialized[static_cast<size_t>(e.node)]) continue;
    const Node& producer = graph.node(e.node);
    bool same = reordered ? reads_in_order(e, n.shape, producer.shape) : e.view.is_contiguous() && n.shape == producer.shape;
    if (!same) continue;  // same points, same order
    NodeId found = through_epilogue(graph, e.node, materialized, reordered, wanted);
    if (found >= 0) return found;
  }
  return -1;
}

}  // namespace

bool sums_product_in_place(const Graph& graph, const Node& reduce) {
  const Edge& e = reduce.inputs[0];
  const Node& product = graph.node(e.node);
  return reduce.op == Op::SumReduce && product.op == Op::Mul && e.view.is_contiguous();
}

NodeId contraction_of(const Graph& graph, NodeId node, const std::vector<bool>& materialized) {
  return through_epilogue(graph, node, materialized, true, [&](NodeId r) {
    const Node& n = graph.node(r);
    return !materialized[static_cast<size_t>(n.inputs[0].node)] && sums_product_in_place(graph, n);
  });
}

NodeId outer_reduction_of(const Graph& graph, NodeId node, const std::vector<bool>& materialized) {
  return through_epilogue(graph, node, materialized, false, [](NodeId) { return true; });
}

bool is_small_reduce(const Node& node) {
  if (!is_reduce(node.op)) return false;
  const Expr& extent = node.inputs[0].view.shape()[static_cast<size_t>(node.axis)];
  return extent.is_const() && extent.value() <= kInlineReduceExtent;
}

}  // namespace lumen::kernel
