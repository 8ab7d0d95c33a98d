#include "lumen/runtime/interp_executor.h"

#include <cstring>
#include <map>

#include "lumen/backend/interp/edge_reader.h"
#include "lumen/backend/interp/interpreter.h"
#include "lumen/core/graph.h"

namespace lumen {

InterpExecutor::InterpExecutor(std::shared_ptr<const Graph> graph, std::vector<Edge> outputs)
    : graph_(std::move(graph)), outputs_(std::move(outputs)) {}

std::vector<Array> InterpExecutor::execute_by_node(const NodeArrays& by_node, const Bindings& bindings) {
  std::map<std::string, Array> inputs;  // the interpreter reads them by name
  for (NodeId id : graph_->input_ids()) {
    if (by_node[static_cast<size_t>(id)]) inputs.emplace(graph_->node(id).name, *by_node[static_cast<size_t>(id)]);
  }
  std::vector<Edge> wanted = outputs_;
  for (const StateUpdate& u : graph_->updates()) wanted.push_back(u.value);
  Bindings bound = bindings;
  std::vector<Array> results = interp::Interpreter(*graph_).run(inputs, wanted, bound);
  if (graph_->updates().empty()) return results;

  // The interpreter checked the inputs; bind the dims the same way for the views.
  std::vector<bool> needed(graph_->size(), true);
  for (NodeId id : graph_->input_ids()) needed[static_cast<size_t>(id)] = inputs.count(graph_->node(id).name) > 0;
  graph_->bind_inputs(inputs, needed, bound);
  for (size_t u = 0; u < graph_->updates().size(); ++u) {
    const StateUpdate& update = graph_->updates()[u];
    const Array& value = results[outputs_.size() + u];
    Array dest = inputs.at(graph_->node(update.state).name);  // shares the state's buffer
    interp::EdgeReader target(update.view, bound);
    size_t elem = dtype_size(value.dtype());
    std::vector<int64_t> idx(value.shape().size(), 0);
    auto* out = static_cast<unsigned char*>(dest.data());
    const auto* in = static_cast<const unsigned char*>(value.data());
    for (int64_t flat = 0; flat < value.numel(); ++flat) {
      std::memcpy(out + static_cast<size_t>(target.source(idx.data())) * elem, in + static_cast<size_t>(flat) * elem, elem);
      for (size_t d = idx.size(); d-- > 0;) {  // next index, row-major
        if (++idx[d] < value.shape()[d]) break;
        idx[d] = 0;
      }
    }
  }
  results.resize(outputs_.size());
  return results;
}

}  // namespace lumen
