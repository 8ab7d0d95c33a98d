#include "lumen/compiler/fusion_stage.h"

#include <algorithm>

#include "lumen/kernel/fusion.h"

namespace lumen::compiler {

void partition_kernels(Pipeline& p) {
  std::vector<Edge> roots = p.outputs;
  for (const StateWrite& w : p.writes) roots.push_back(p.graph->node(w.copy).inputs[0]);
  kernel::Partition part = kernel::partition(*p.graph, roots);
  p.report.fusion_rounds = part.rounds;
  p.materialized = std::move(part.materialized);
  p.ops_per_element = std::move(part.ops_per_element);
  auto is_write = [&](NodeId n) {
    return std::any_of(p.writes.begin(), p.writes.end(), [&](const StateWrite& w) { return w.copy == n; });
  };
  p.kernel_nodes.clear();
  for (NodeId n : part.kernels) {
    if (!p.needed[static_cast<size_t>(n)] || is_write(n)) continue;
    p.kernel_nodes.push_back(n);
  }
}

}  // namespace lumen::compiler
