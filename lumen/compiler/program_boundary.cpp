#include "lumen/compiler/program_boundary.h"

#include <algorithm>

namespace lumen::compiler {

namespace {

// A Contiguous node copying what `e` sees into a fresh buffer; the edge reading it.
Edge copy_of(Graph& graph, const Edge& e) {
  Node copy;
  copy.op = Op::Contiguous;
  copy.dtype = graph.node(e.node).dtype;
  copy.shape = e.view.shape();
  copy.inputs = {e};
  NodeId id = graph.add(std::move(copy));
  return Edge{id, View::contiguous(graph.node(id).shape)};
}

// Each update's value gets its own buffer (so the write kernel only copies,
// and never reads the state it writes); a Contiguous node stands for the copy.
void prepare_updates(Pipeline& p) {
  for (const StateUpdate& u : p.graph->updates()) {
    Edge value = u.value;
    const Node& v = p.graph->node(value.node);
    if (v.op == Op::Input && v.persistent) {  // a state copied into state: read it into a buffer first
      value = copy_of(*p.graph, value);
    }
    p.writes.push_back({copy_of(*p.graph, value).node, u.state, u.view});
  }
}

// Outputs are fresh contiguous arrays: an output read through a view, or an
// input passed straight through, gets a copy node.
void prepare_outputs(Pipeline& p) {
  std::vector<NodeId> seen;
  for (Edge& e : p.outputs) {
    const Node& n = p.graph->node(e.node);
    bool repeated = std::find(seen.begin(), seen.end(), e.node) != seen.end();
    seen.push_back(e.node);
    // A contiguous view can still be a prefix slice: the output must be the whole buffer.
    bool whole = shape_numel(e.view.shape()) == shape_numel(n.shape);
    if (e.view.is_contiguous() && whole && n.op != Op::Input && !repeated) continue;
    e = copy_of(*p.graph, e);
  }
}

void mark_needed(Pipeline& p) {
  p.needed.assign(p.graph->size(), false);
  for (const Edge& e : p.outputs) p.needed[static_cast<size_t>(e.node)] = true;
  for (const StateWrite& w : p.writes) p.needed[static_cast<size_t>(w.copy)] = true;
  for (size_t i = p.graph->size(); i-- > 0;) {
    if (!p.needed[i]) continue;
    for (const Edge& e : p.graph->nodes()[i].inputs) p.needed[static_cast<size_t>(e.node)] = true;
  }
}

}  // namespace

void set_program_boundary(Pipeline& p) {
  prepare_updates(p);
  prepare_outputs(p);
  mark_needed(p);
}

}  // namespace lumen::compiler
