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

  // Cost of evaluating a node once, counting its inlined producers. An inlined
  // reduction counts 1 inside its consumers (it is computed once per point and
  // reused), but its own cost is a whole reduction.
  std::vector<double> subtree(n, 0);
  std::vector<bool> reads_data(n, false);  // a node whose value is a pure constant is never worth a buffer
  LowerOptions lower_options;
  lower_options.assumed_dim = options.assumed_dim;
  for (int round = 0; round < 64; ++round) {
    p.rounds = round + 1;
    for (size_t i = 0; i < n; ++i) {
      const Node& node = graph.nodes()[i];
      double c = op_cost(node);
      bool data = node.op == Op::Input;
      for (const Edge& e : node.inputs) {
        auto in = static_cast<size_t>(e.node);
        data = data || reads_data[in] || p.materialized[in];
        if (p.materialized[in]) continue;
        bool loop_reduce = is_reduce(graph.nodes()[in].op) && !is_small_reduce(graph.nodes()[in]);
        c += loop_reduce ? 1 : subtree[in];
      }
      if (is_reduce(node.op)) {
        c = (c + 1) * assumed_numel({node.inputs[0].view.shape()[static_cast<size_t>(node.axis)]}, options.assumed_dim);
      }
      subtree[i] = c;
      reads_data[i] = data;
    }
    std::vector<double> evaluations(n, 0);
    for (size_t i = 0; i < n; ++i) {
      if (!p.materialized[i] || graph.nodes()[i].op == Op::Input) continue;
      LoweredKernel k = lower(graph, static_cast<NodeId>(i), p.materialized, Schedule(graph.nodes()[i].shape), "k",
                              lower_options);
      for (size_t j = 0; j < n; ++j) evaluations[j] += k.evaluations[j];
    }
    // Offenders: recomputed too often for their cost.
    std::vector<bool> offender(n, false);
    for (size_t i = n; i-- > 0;) {
      if (p.materialized[i] || evaluations[i] == 0 || !reads_data[i]) continue;
      double factor = evaluations[i] / assumed_numel(graph.nodes()[i].shape, options.assumed_dim);
      offender[i] = factor > options.min_recompute && (factor - 1) * subtree[i] > options.max_extra_work;
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
