#include "lumen/egraph/graph_hash.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace lumen::egraph {

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

uint64_t text(const std::string& s) { return std::hash<std::string>()(s); }

}  // namespace

namespace {

uint64_t hash_of(const Graph& graph, const std::vector<std::pair<std::string, Edge>>& outputs, bool unordered) {
  std::vector<uint64_t> node_hash(graph.size());
  auto edge_hash = [&](const Edge& e) {
    return mix(node_hash[static_cast<size_t>(e.node)], text(to_string(e.view.base_shape()) + e.view.to_string()));
  };
  for (size_t i = 0; i < graph.size(); ++i) {
    const Node& n = graph.nodes()[i];
    uint64_t h = mix(static_cast<uint64_t>(n.op), static_cast<uint64_t>(n.dtype));
    h = mix(h, text(to_string(n.shape)));
    h = mix(h, static_cast<uint64_t>(n.axis + 1));
    uint64_t bits = 0;
    std::memcpy(&bits, &n.number, sizeof bits);
    h = mix(h, bits);
    if (n.pattern.defined()) h = mix(h, text(to_string(n.pattern)));
    h = mix(h, text(n.name));
    h = mix(h, (n.persistent ? 2u : 0u) | (n.parameter ? 1u : 0u));
    std::vector<uint64_t> operands;
    for (const Edge& e : n.inputs) operands.push_back(edge_hash(e));
    if (unordered && (n.op == Op::Add || n.op == Op::Mul)) std::sort(operands.begin(), operands.end());
    for (uint64_t o : operands) h = mix(h, o);
    node_hash[i] = h;
  }
  uint64_t h = 0x6c756d656eULL;
  for (const auto& [name, edge] : outputs) h = mix(mix(h, text(name)), edge_hash(edge));
  for (const StateUpdate& u : graph.updates()) {
    h = mix(mix(h, node_hash[static_cast<size_t>(u.state)]), text(u.view.to_string()));
    h = mix(h, edge_hash(u.value));
  }
  for (const DimConstraint& c : graph.constraints()) h = mix(h, text(to_string(c.condition)));
  return h;
}

}  // namespace

uint64_t graph_hash(const Graph& graph) {
  std::vector<std::pair<std::string, Edge>> outputs;
  for (const NamedOutput& o : graph.outputs()) outputs.emplace_back(o.name, o.edge);
  return hash_of(graph, outputs, false);
}

uint64_t graph_hash(const Graph& graph, const std::vector<Edge>& outputs) {
  std::vector<std::pair<std::string, Edge>> named;
  for (const Edge& e : outputs) named.emplace_back("", e);
  return hash_of(graph, named, false);
}

uint64_t graph_hash_unordered(const Graph& graph, const std::vector<Edge>& outputs) {
  std::vector<std::pair<std::string, Edge>> named;
  for (const Edge& e : outputs) named.emplace_back("", e);
  return hash_of(graph, named, true);
}

}  // namespace lumen::egraph
