#include "lumen/compiler/buffer_lives.h"

#include <algorithm>

#include "lumen/core/simplify.h"

namespace lumen::compiler {

namespace {

int64_t bytes_of(const Node& node, const Bindings& dims) {
  int64_t n = static_cast<int64_t>(dtype_size(node.dtype));
  for (const Expr& d : node.shape) n *= evaluate(d, dims);
  return n;
}

// Buffers the kernel computing `root` reads: the materialised nodes (and
// inputs) reached through the nodes it inlines. `seen` marks nodes visited
// for this kernel (by its place `at`).
std::vector<NodeId> buffers_read(const Graph& graph, NodeId root, const std::vector<bool>& materialized, int at,
                                 std::vector<int>& seen) {
  std::vector<NodeId> found, stack = {root};
  while (!stack.empty()) {
    NodeId n = stack.back();
    stack.pop_back();
    for (const Edge& e : graph.node(n).inputs) {
      auto in = static_cast<size_t>(e.node);
      if (seen[in] == at) continue;
      seen[in] = at;
      if (materialized[in]) {
        found.push_back(e.node);
      } else {
        stack.push_back(e.node);
      }
    }
  }
  return found;
}

}  // namespace

std::optional<ParameterReads> parameters_only(const Graph& graph, const std::vector<NodeId>& reads,
                                              const KeptValues& kept) {
  ParameterReads out;
  for (NodeId id : reads) {
    auto k = kept.find(id);
    if (k != kept.end()) {
      out.names.insert(out.names.end(), k->second.names.begin(), k->second.names.end());
      out.bytes += k->second.bytes;
      out.widest = std::max(out.widest, k->second.widest);
      continue;
    }
    const Node* node = id >= 0 ? &graph.node(id) : nullptr;  // (< 0: a scratch buffer)
    if (!node || node->op != Op::Input || !node->parameter || node->persistent) return std::nullopt;
    int64_t bytes = static_cast<int64_t>(dtype_size(node->dtype));
    for (const Expr& d : node->shape) {
      if (!d.is_const()) return std::nullopt;
      bytes *= d.value();
    }
    out.bytes += bytes;
    out.widest = std::max(out.widest, dtype_size(node->dtype));
    out.names.push_back(node->name);
  }
  if (out.names.empty()) return std::nullopt;
  std::sort(out.names.begin(), out.names.end());
  out.names.erase(std::unique(out.names.begin(), out.names.end()), out.names.end());
  return out;
}

int64_t static_numel(const Shape& shape) {
  Expr n = simplify(shape_numel(shape));
  return n.is_const() ? n.value() : -1;
}

bool worth_keeping(const ParameterReads& read, int64_t elements, DType dtype) {
  return elements >= 0 && dtype_size(dtype) <= read.widest &&
         elements * static_cast<int64_t>(dtype_size(dtype)) <= kKeptGrowth * read.bytes;
}

std::optional<ParameterReads> kept_value(const ParameterReads& read, const Node& made) {
  int64_t elements = static_numel(made.shape);
  if (!worth_keeping(read, elements, made.dtype)) return std::nullopt;
  size_t size = dtype_size(made.dtype);
  return ParameterReads{read.names, elements * static_cast<int64_t>(size), size};
}

BufferLives buffer_lives(const Pipeline& p, const Bindings& dims) {
  const Graph& graph = *p.graph;
  size_t n = graph.size();
  BufferLives lives;
  lives.order = p.kernel_nodes;
  for (const StateWrite& w : p.writes) lives.order.push_back(w.copy);
  lives.place.assign(n, -1);
  lives.readers.assign(n, {});
  std::vector<int> seen(n, -1);
  // Outputs are arrays of their own, a state write's copy stores into the state, and values
  // derived from parameters alone are kept between runs outside the arena (worth_keeping).
  std::vector<bool> outside(n, false);
  KeptValues kept;
  for (size_t k = 0; k < lives.order.size(); ++k) {
    auto at = static_cast<int>(k);
    lives.place[static_cast<size_t>(lives.order[k])] = at;
    std::vector<NodeId> reads = buffers_read(graph, lives.order[k], p.materialized, at, seen);
    for (NodeId b : reads) lives.readers[static_cast<size_t>(b)].push_back(at);
    auto parameters = parameters_only(graph, reads, kept);
    if (!parameters || k >= p.kernel_nodes.size()) continue;
    if (auto value = kept_value(*parameters, graph.node(lives.order[k]))) {
      outside[static_cast<size_t>(lives.order[k])] = true;
      kept[lives.order[k]] = *value;
    }
  }
  for (const Edge& e : p.outputs) outside[static_cast<size_t>(e.node)] = true;
  for (const StateWrite& w : p.writes) outside[static_cast<size_t>(w.copy)] = true;
  lives.bytes.assign(n, 0);
  lives.first.assign(n, -1);
  lives.last.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (lives.place[i] < 0 || outside[i]) continue;
    lives.bytes[i] = bytes_of(graph.nodes()[i], dims);
    lives.first[i] = lives.place[i];
    lives.last[i] = lives.readers[i].empty() ? lives.place[i] : std::max(lives.place[i], lives.readers[i].back());
  }
  return lives;
}

std::vector<int64_t> live_bytes(const BufferLives& lives, const std::vector<int>& first, const std::vector<int>& last) {
  std::vector<int64_t> live(lives.order.size() + 1, 0);  // a difference array over places
  for (size_t i = 0; i < lives.bytes.size(); ++i) {
    if (first[i] < 0 || lives.bytes[i] == 0) continue;
    live[static_cast<size_t>(first[i])] += lives.bytes[i];
    live[static_cast<size_t>(last[i]) + 1] -= lives.bytes[i];
  }
  int64_t running = 0;
  for (int64_t& b : live) b = running += b;
  live.pop_back();
  return live;
}

}  // namespace lumen::compiler
