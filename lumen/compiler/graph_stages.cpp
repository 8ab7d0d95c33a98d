#include "lumen/compiler/graph_stages.h"

namespace lumen::compiler {

std::vector<GraphStage> graph_stages() {
  std::vector<GraphStage> stages;
  // The e-graph search (lumen/egraph) goes here: saturate the graph under
  // general rewrite rules within limits and extract the best candidate. Until
  // then the stage leaves the graph as it is.
  stages.push_back({"egraph", [](Graph& graph, std::vector<Edge>& outputs) {
                      (void)graph;
                      (void)outputs;
                    }});
  return stages;
}

void run_graph_stages(const std::vector<GraphStage>& stages, Graph& graph, std::vector<Edge>& outputs) {
  for (const GraphStage& s : stages) s.run(graph, outputs);
}

}  // namespace lumen::compiler
