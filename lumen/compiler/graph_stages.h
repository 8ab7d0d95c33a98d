// Graph stages: graph -> graph rewrites that run before the program's
// boundary is set and the graph is fused into kernels (graph passes such as
// CSE, DCE, folding, simplification, then the e-graph search). Each stage
// takes the compiled copy of the graph (with its state updates) and the
// output edges, and may rewrite both; what the outputs compute must not
// change. This is where new graph-level stages plug in: add them to the list
// graph_stages() returns.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "lumen/core/graph.h"

namespace lumen::compiler {

struct GraphStage {
  std::string name;
  std::function<void(Graph& graph, std::vector<Edge>& outputs)> run;
};

// The stages, in the order they run.
std::vector<GraphStage> graph_stages();

// Runs the stages in order.
void run_graph_stages(const std::vector<GraphStage>& stages, Graph& graph, std::vector<Edge>& outputs);

}  // namespace lumen::compiler
