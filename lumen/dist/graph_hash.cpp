#include "lumen/dist/graph_hash.h"

#include <sstream>

namespace lumen::dist {

namespace {

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

uint64_t plan_fingerprint(const Graph& graph, const std::vector<NamedOutput>& outputs, const ParallelSpec& spec) {
  std::ostringstream s;
  for (const Node& n : graph.nodes()) {
    s << op_name(n.op) << ' ' << dtype_name(n.dtype) << ' ' << to_string(n.shape) << " '" << n.name << "' " << n.persistent
      << n.parameter << ' ' << n.number << ' ' << (n.pattern.defined() ? to_string(n.pattern) : "-") << ' ' << n.axis;
    for (const Edge& e : n.inputs) s << " <" << e.node << ' ' << e.view.to_string() << '>';
    s << '\n';
  }
  for (const NamedOutput& o : outputs) s << "out " << o.name << ' ' << o.edge.node << ' ' << o.edge.view.to_string() << '\n';
  for (const StateUpdate& u : graph.updates()) {
    s << "update " << u.state << ' ' << u.view.to_string() << ' ' << u.value.node << ' ' << u.value.view.to_string() << '\n';
  }
  s << spec.describe();
  return fnv1a(s.str());
}

}  // namespace lumen::dist
