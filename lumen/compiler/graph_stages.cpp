#include "lumen/compiler/graph_stages.h"

namespace lumen::compiler {

std::vector<GraphStage> graph_stages() {
  std::vector<GraphStage> stages;
  // The e-graph search itself runs in graph_search.h, in front of the whole
  // pipeline, because it compiles and times whole candidate programs; this
  // stage is where cheap graph passes that need no measuring go.
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
