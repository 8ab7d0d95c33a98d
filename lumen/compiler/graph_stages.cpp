#include "lumen/compiler/graph_stages.h"

#include "lumen/passes/epilogue_shape.h"

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
  stages.push_back({"epilogue-shape", [](Graph& graph, std::vector<Edge>& outputs) {
                      int moved = 0;
                      Graph rewritten = passes::epilogues_in_contraction_shape(graph, outputs, &moved);
                      if (moved > 0) graph = std::move(rewritten);
                    }});
  return stages;
}

void run_graph_stages(const std::vector<GraphStage>& stages, Graph& graph, std::vector<Edge>& outputs) {
  for (const GraphStage& s : stages) s.run(graph, outputs);
}

}  // namespace lumen::compiler
