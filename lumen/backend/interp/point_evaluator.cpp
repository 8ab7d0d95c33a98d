#include "lumen/backend/interp/point_evaluator.h"

#include "lumen/backend/interp/semantics.h"
#include "lumen/core/error.h"
#include "lumen/core/expr_eval.h"

namespace lumen::interp {

namespace {

int64_t flat_of(const std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  int64_t f = 0;
  for (size_t d = 0; d < dims.size(); ++d) f = f * dims[d] + idx[d];
  return f;
}

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = dims[d] ? flat % dims[d] : 0;
    flat = dims[d] ? flat / dims[d] : 0;
  }
  return idx;
}

}  // namespace

PointEvaluator::PointEvaluator(const Graph& graph, std::map<NodeId, const Array*> buffers, Bindings bindings)
    : graph_(graph), buffers_(std::move(buffers)), bindings_(std::move(bindings)) {}

const std::vector<int64_t>& PointEvaluator::dims(NodeId n) {
  auto it = dims_.find(n);
  if (it != dims_.end()) return it->second;
  std::vector<int64_t> d;
  for (const Expr& e : graph_.node(n).shape) d.push_back(evaluate(e, bindings_));
  return dims_[n] = d;
}

EdgeReader& PointEvaluator::reader(const Node& consumer, size_t input) {
  auto key = std::make_pair(&consumer, input);
  auto it = readers_.find(key);
  if (it == readers_.end()) {
    it = readers_.emplace(key, std::make_unique<EdgeReader>(consumer.inputs[input].view, bindings_)).first;
  }
  return *it->second;
}

Scalar PointEvaluator::value(NodeId n, const std::vector<int64_t>& idx) {
  int64_t flat = flat_of(idx, dims(n));
  auto buffer = buffers_.find(n);
  if (buffer != buffers_.end()) return buffer->second->load(flat);
  auto& memo = memo_[n];
  auto it = memo.find(flat);
  if (it != memo.end()) return it->second;
  Scalar v = store_as(graph_.node(n).dtype, compute(n, idx));
  memo[flat] = v;
  return v;
}

Scalar PointEvaluator::edge_value(const Node& consumer, size_t input, const std::vector<int64_t>& idx) {
  int64_t pos = reader(consumer, input).source(idx.data());
  NodeId producer = consumer.inputs[input].node;
  if (pos < 0) return is_float(graph_.node(producer).dtype) ? Scalar::of_float(0.0) : Scalar::of_int(0);  // padding
  return value(producer, unravel(pos, dims(producer)));
}

Scalar PointEvaluator::compute(NodeId id, const std::vector<int64_t>& idx) {
  const Node& n = graph_.node(id);
  switch (n.op) {
    case Op::Input: fail("reference: input '", n.name, "' has no buffer");
    case Op::Constant: {
      if (!n.pattern.defined()) return Scalar::of_float(n.number);
      Bindings b = bindings_;
      for (size_t d = 0; d < idx.size(); ++d) b["i" + std::to_string(d)] = idx[d];
      return Scalar::of_int(evaluate(n.pattern, b));
    }
    case Op::Cast:
    case Op::Contiguous: return edge_value(n, 0, idx);
    case Op::SumReduce:
    case Op::MaxReduce: {
      auto axis = static_cast<size_t>(n.axis);
      int64_t extent = evaluate(n.inputs[0].view.shape()[axis], bindings_);
      std::vector<int64_t> in(idx);
      in.insert(in.begin() + static_cast<long>(axis), 0);
      Scalar acc = reduce_identity(n.op, n.dtype);
      for (int64_t k = 0; k < extent; ++k) {
        in[axis] = k;
        acc = reduce_step(n.op, n.dtype, acc, edge_value(n, 0, in));
      }
      return acc;
    }
    case Op::Gather: {
      auto axis = static_cast<size_t>(n.axis);
      size_t k = n.inputs[1].view.rank();
      std::vector<int64_t> index_idx(idx.begin() + static_cast<long>(axis), idx.begin() + static_cast<long>(axis + k));
      int64_t j = edge_value(n, 1, index_idx).to_int();
      int64_t size = evaluate(n.inputs[0].view.shape()[axis], bindings_);
      if (j < 0 || j >= size) fail("gather: index ", j, " is out of range for axis ", axis, " of size ", size);
      std::vector<int64_t> data_idx(idx.begin(), idx.begin() + static_cast<long>(axis));
      data_idx.push_back(j);
      data_idx.insert(data_idx.end(), idx.begin() + static_cast<long>(axis + k), idx.end());
      return edge_value(n, 0, data_idx);
    }
    default: break;
  }
  if (is_unary(n.op)) return apply_unary(n.op, edge_value(n, 0, idx));
  DType operand = graph_.node(n.inputs[0].node).dtype;
  return apply_binary(n.op, operand, edge_value(n, 0, idx), edge_value(n, 1, idx));
}

}  // namespace lumen::interp
