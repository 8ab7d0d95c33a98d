#include "lumen/kernel/fusion.h"

#include <algorithm>

#include "lumen/core/expr_eval.h"
#include "lumen/kernel/lower.h"

namespace lumen::kernel {

namespace {

// Rough ALU cost of evaluating a node once, given its inputs.
double op_cost(const Node& n) {
  if (is_unary(n.op)) return n.op == Op::Recip || n.op == Op::Sqrt ? 2 : 5;
  if (is_binary(n.op)) return 1;
  if (n.op == Op::Gather) return 2;
  return 0;
}

double assumed_numel(const Shape& shape, double assumed_dim) {
  double n = 1;
  for (const Expr& d : shape) {
    Bindings b;
    for (const Expr& v : expr_vars(d)) b[v.name()] = static_cast<int64_t>(assumed_dim);
    n *= static_cast<double>(evaluate(d, b));
  }
  return std::max(n, 1.0);
}

}  // namespace

Partition partition(const Graph& graph, const std::vector<Edge>& outputs, const FusionOptions& options) {
  size_t n = graph.size();
  Partition p;
  p.materialized.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    Op op = graph.nodes()[i].op;
    if (op == Op::Input || op == Op::Contiguous) p.materialized[i] = true;
  }
  for (const Edge& e : outputs) p.materialized[static_cast<size_t>(e.node)] = true;

  // Cost of a node's inlined subtree per evaluation (materialised inputs cost a load).
  std::vector<double> subtree(n, 0);
  LowerOptions lower_options;
  lower_options.assumed_dim = options.assumed_dim;
  for (int round = 0; round < 64; ++round) {
    p.rounds = round + 1;
    for (size_t i = 0; i < n; ++i) {
      const Node& node = graph.nodes()[i];
      double c = op_cost(node);
      for (const Edge& e : node.inputs) {
        if (!p.materialized[static_cast<size_t>(e.node)]) c += subtree[static_cast<size_t>(e.node)];
      }
      if (is_reduce(node.op)) c *= assumed_numel({node.inputs[0].view.shape()[static_cast<size_t>(node.axis)]}, options.assumed_dim);
      subtree[i] = c;
    }
    std::vector<double> evaluations(n, 0);
    for (size_t i = 0; i < n; ++i) {
      if (!p.materialized[i] || graph.nodes()[i].op == Op::Input) continue;
      LoweredKernel k = lower(graph, static_cast<NodeId>(i), p.materialized, Schedule(graph.nodes()[i].shape), "k",
                              lower_options);
      for (size_t j = 0; j < n; ++j) evaluations[j] += k.evaluations[j];
    }
    // Offenders, consumers first: materialising a consumer changes its inputs' counts.
    std::vector<bool> offender(n, false);
    for (size_t i = n; i-- > 0;) {
      if (p.materialized[i] || evaluations[i] == 0) continue;
      const Node& node = graph.nodes()[i];
      double factor = evaluations[i] / assumed_numel(node.shape, options.assumed_dim);
      bool bad = is_reduce(node.op) ? factor > options.max_reduce_recompute
                                    : factor > options.max_recompute && (factor - 1) * subtree[i] > options.max_extra_work;
      offender[i] = bad;
    }
    // Materialise offenders that no other offender inlines (the outermost ones).
    std::vector<bool> inside_offender(n, false);
    for (size_t i = n; i-- > 0;) {
      if (!offender[i] && !inside_offender[i]) continue;
      for (const Edge& e : graph.nodes()[i].inputs) {
        if (!p.materialized[static_cast<size_t>(e.node)]) inside_offender[static_cast<size_t>(e.node)] = true;
      }
    }
    bool changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (offender[i] && !inside_offender[i]) {
        p.materialized[i] = true;
        changed = true;
      }
    }
    if (!changed) break;
  }
  for (size_t i = 0; i < n; ++i) {
    if (p.materialized[i] && graph.nodes()[i].op != Op::Input) p.kernels.push_back(static_cast<NodeId>(i));
  }
  return p;
}

}  // namespace lumen::kernel
