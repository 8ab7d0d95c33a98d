#include "lumen/passes/autodiff.h"

#include <map>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/passes/derivative_rules.h"
#include "lumen/passes/view_adjoint.h"

namespace lumen::passes {

namespace {

void check_loss(const Tensor& loss) {
  if (!loss.defined()) fail("gradients: the loss is an undefined tensor");
  if (!differentiable(loss.dtype())) {
    fail("gradients: the loss must be a float tensor, got ", dtype_name(loss.dtype()), " ", to_string(loss.shape()));
  }
  for (const Expr& d : loss.shape()) {
    if (!simplify(d).is_const(1)) {
      fail("gradients: the loss must be a scalar (rank 0 or every dim 1), got shape ", to_string(loss.shape()),
           " (reduce it first, e.g. with mean or sum)");
    }
  }
}

// Nodes whose value depends on any of `sources` (the sources included).
std::vector<bool> depends_on(const Graph& graph, const std::vector<bool>& sources) {
  std::vector<bool> reached = sources;
  for (size_t id = 0; id < graph.size(); ++id) {
    for (const Edge& e : graph.nodes()[id].inputs) {
      if (reached[static_cast<size_t>(e.node)]) reached[id] = true;
    }
  }
  return reached;
}

// The gradient with respect to `t` (a node seen through a view) from the
// gradient with respect to its node.
Tensor through_view(const Tensor& node_grad, const Tensor& t) {
  Expr injective = simplify(t.view().injective_condition());
  if (!injective.is_const(1) && !prove(injective)) {
    fail("gradients: a tensor to differentiate with respect to is seen through a view that reads some element ",
         "more than once or reads padding (", t.view().to_string(), "); differentiate with respect to the tensor ",
         "before the broadcast or pad");
  }
  return Tensor(node_grad.graph(), node_grad.node_id(), node_grad.view().then(t.view()));
}

}  // namespace

std::vector<Tensor> gradients(const Tensor& loss, const std::vector<Tensor>& wrt) {
  check_loss(loss);
  Graph& graph = *loss.graph();
  std::vector<bool> sources(graph.size(), false);
  for (const Tensor& t : wrt) {
    if (!t.defined() || t.graph() != &graph) fail("gradients: a tensor to differentiate with respect to is undefined or in another graph");
    if (!differentiable(t.dtype())) {
      fail("gradients: cannot differentiate with respect to a ", dtype_name(t.dtype()), " tensor ", to_string(t.shape()),
           " (node ", t.node_id(), "); only float tensors have gradients");
    }
    sources[static_cast<size_t>(t.node_id())] = true;
  }
  std::vector<bool> needed = depends_on(graph, sources);
  std::map<NodeId, Tensor> grads;
  auto accumulate = [&](NodeId node, const Tensor& g) {
    auto it = grads.find(node);
    if (it == grads.end()) {
      grads.emplace(node, g);
    } else {
      it->second = it->second + g;
    }
  };
  Tensor seed = graph.constant(1, loss.dtype()).expand(loss.shape());
  if (needed[static_cast<size_t>(loss.node_id())]) accumulate(loss.node_id(), view_adjoint(loss.view(), seed));
  for (NodeId id = loss.node_id(); id >= 0; --id) {
    auto it = grads.find(id);
    if (it == grads.end()) continue;
    Tensor g = it->second;
    std::vector<Tensor> parts = operand_gradients(graph, id, g);
    const std::vector<Edge> inputs = graph.node(id).inputs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      NodeId producer = inputs[i].node;
      if (!parts[i].defined() || !needed[static_cast<size_t>(producer)]) continue;
      if (!differentiable(graph.node(producer).dtype)) continue;
      accumulate(producer, view_adjoint(inputs[i].view, parts[i]));
    }
    if (!sources[static_cast<size_t>(id)]) grads.erase(id);
  }
  std::vector<Tensor> out;
  for (const Tensor& t : wrt) {
    auto it = grads.find(t.node_id());
    Shape shape = graph.node(t.node_id()).shape;  // copies: adding nodes may move the graph's storage
    DType dtype = graph.node(t.node_id()).dtype;
    Tensor node_grad = it != grads.end() ? it->second : graph.constant(0, dtype).expand(shape).contiguous();
    out.push_back(t.view().is_contiguous() ? node_grad : through_view(node_grad, t));
  }
  return out;
}

}  // namespace lumen::passes
