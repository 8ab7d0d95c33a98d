#include "lumen/kernel/heuristic.h"

#include "lumen/kernel/schedule_space.h"

namespace lumen::kernel {

std::vector<Action> heuristic_actions(const Graph& graph, NodeId node, const std::vector<bool>& materialized,
                                      const Target& target) {
  KernelFacts facts = kernel_facts(graph, node, materialized, target);
  return knob_actions(facts, traced_heuristic_knobs(graph, facts));
}

}  // namespace lumen::kernel
