#include "lumen/passes/derivative_rules.h"

#include "lumen/core/error.h"

namespace lumen::passes {

namespace {

constexpr double kLn2 = 0.6931471805599453;
constexpr double kHalfPi = 1.5707963267948966;

Tensor operand(Graph& graph, const Node& n, size_t i) {
  return Tensor(&graph, n.inputs[i].node, n.inputs[i].view);
}

// 1 where a == b, else 0, in `dtype` (only LessThan: a == b iff neither is less).
Tensor equal_as(const Tensor& a, const Tensor& b, DType dtype) {
  Tensor one = a.graph()->constant(1, dtype);
  return one - a.less_than(b).cast(dtype) - b.less_than(a).cast(dtype);
}

// Max reduction: the gradient is shared equally by every position holding the
// maximum (torch.amax and torch.max without dim do the same; torch.maximum
// splits ties in half, which is this rule on a stacked pair).
Tensor max_reduce_gradient(Graph& graph, const Node& n, NodeId id, const Tensor& grad) {
  Tensor x = operand(graph, n, 0);
  const Shape& shape = x.shape();
  Tensor m = graph.tensor(id).unsqueeze(n.axis).expand(shape);
  Tensor hit = graph.constant(1, n.dtype) - x.less_than(m).cast(n.dtype);
  Tensor count = hit.sum_reduce(n.axis).unsqueeze(n.axis).expand(shape);
  return grad.unsqueeze(n.axis).expand(shape) * hit * count.recip();
}

// Gather's adjoint is a scatter-add: data[a..., k, b...] receives the sum of
// grad[a..., j, b...] over the index positions j whose index equals k, formed
// as a one-hot comparison times the gradient, summed over j.
Tensor gather_gradient(Graph& graph, const Node& n, const Tensor& grad) {
  Tensor data = operand(graph, n, 0);
  Tensor indices = operand(graph, n, 1);
  const Shape& ds = data.shape();
  size_t a = static_cast<size_t>(n.axis);
  Expr k = ds[a];
  Expr j = shape_numel(indices.shape());
  Tensor flat_idx = indices.reshape({j}).unsqueeze(1).expand({j, k});
  Tensor positions = graph.iota(loop_index({j, k}, 1), {j, k}, DType::I32);
  Tensor one_hot = equal_as(flat_idx, positions, n.dtype);  // [j, k]
  Shape before(ds.begin(), ds.begin() + static_cast<long>(a));
  Shape after(ds.begin() + static_cast<long>(a) + 1, ds.end());
  Shape gs = before;  // grad as [a..., j, 1, b...]
  gs.push_back(j);
  gs.push_back(Expr(1));
  gs.insert(gs.end(), after.begin(), after.end());
  Shape hs(before.size(), Expr(1));  // one-hot as [1..., j, k, 1...]
  hs.push_back(j);
  hs.push_back(k);
  hs.insert(hs.end(), after.size(), Expr(1));
  Shape full = before;
  full.push_back(j);
  full.push_back(k);
  full.insert(full.end(), after.begin(), after.end());
  Tensor product = grad.reshape(gs).expand(full) * one_hot.reshape(hs).expand(full);
  return product.sum_reduce(static_cast<int>(a));
}

Tensor unary_gradient(Graph& graph, const Node& n, NodeId id, const Tensor& grad) {
  Tensor x = operand(graph, n, 0);
  Tensor y = graph.tensor(id);
  switch (n.op) {
    case Op::Log2: return grad * x.recip() * (1.0 / kLn2);
    case Op::Exp2: return grad * y * kLn2;
    case Op::Sin: return grad * (x + kHalfPi).sin();
    case Op::Sqrt: return grad * y.recip() * 0.5;
    case Op::Recip: return grad * (y * y) * -1.0;
    default: fail("autodiff: ", op_name(n.op), " is not a unary primitive");
  }
}

}  // namespace

bool differentiable(DType dtype) { return is_float(dtype); }

std::vector<Tensor> operand_gradients(Graph& graph, NodeId id, const Tensor& grad) {
  const Node n = graph.node(id);  // a copy: adding nodes may move the graph's storage
  std::vector<Tensor> out(n.inputs.size());
  if (!differentiable(n.dtype) && n.op != Op::LessThan) return out;
  switch (n.op) {
    case Op::Input:
    case Op::Constant:
    case Op::LessThan: return out;  // a step function: zero almost everywhere
    case Op::Log2:
    case Op::Exp2:
    case Op::Sin:
    case Op::Sqrt:
    case Op::Recip: out[0] = unary_gradient(graph, n, id, grad); return out;
    case Op::Cast:
      if (differentiable(graph.node(n.inputs[0].node).dtype)) out[0] = grad.cast(graph.node(n.inputs[0].node).dtype);
      return out;
    case Op::Contiguous: out[0] = grad; return out;
    case Op::Add: out[0] = grad; out[1] = grad; return out;
    case Op::Mul: out[0] = grad * operand(graph, n, 1); out[1] = grad * operand(graph, n, 0); return out;
    case Op::Mod: {  // a - trunc(a / b) * b: d/da = 1, d/db = -trunc(a / b) = (y - a) / b
      Tensor a = operand(graph, n, 0), b = operand(graph, n, 1);
      out[0] = grad;
      out[1] = grad * (graph.tensor(id) - a) * b.recip();
      return out;
    }
    case Op::SumReduce: out[0] = grad.unsqueeze(n.axis).expand(operand(graph, n, 0).shape()); return out;
    case Op::MaxReduce: out[0] = max_reduce_gradient(graph, n, id, grad); return out;
    case Op::Gather: out[0] = gather_gradient(graph, n, grad); return out;
  }
  fail("autodiff: no derivative rule for ", op_name(n.op));
}

}  // namespace lumen::passes
