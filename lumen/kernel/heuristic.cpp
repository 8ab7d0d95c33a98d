#include "lumen/kernel/heuristic.h"

#include "lumen/core/expr_eval.h"

namespace lumen::kernel {

namespace {

double assumed(const Expr& e) {
  Bindings b;
  for (const Expr& v : expr_vars(e)) b[v.name()] = 64;
  return static_cast<double>(evaluate(e, b));
}

}  // namespace

std::vector<Action> heuristic_actions(const Graph& graph, NodeId node, const std::vector<bool>&, const Target& target) {
  const Shape& shape = graph.node(node).shape;
  std::vector<Action> actions;
  if (shape.empty() || target.threads < 2) return actions;
  double numel = 1;
  for (const Expr& d : shape) numel *= assumed(d);
  // Parallelise the outermost loop with more than one iteration.
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d].is_const(1)) continue;
    if (numel < 4096 && shape[d].is_const()) break;
    if (d != 0) actions.push_back(Action::reorder(static_cast<int>(d), 0));
    actions.push_back(Action::set_kind(0, LoopKind::Parallel));
    break;
  }
  return actions;
}

}  // namespace lumen::kernel
