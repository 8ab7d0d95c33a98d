#include "lumen/dist/placement.h"

#include <algorithm>

#include "lumen/core/expr_eval.h"

namespace lumen::dist {

namespace {

// Bytes of a node's output with dynamic dims at a representative 128.
double bytes_of(const Graph& g, const Node& n) {
  Bindings b;
  for (const std::string& d : g.dim_names()) b[d] = 128;
  double elements = 1;
  for (const Expr& d : n.shape) elements *= static_cast<double>(evaluate(d, b));
  return elements * static_cast<double>(dtype_size(n.dtype));
}

class Placer {
 public:
  Placer(const Graph& g, const ParallelSpec& spec, const std::vector<NamedOutput>& outputs)
      : g_(g), spec_(spec), stage_(g.size(), -1), consumers_(g.size()), fixed_(g.size(), false) {
    for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
      for (const Edge& e : g.node(id).inputs) consumers_[static_cast<size_t>(e.node)].push_back(id);
    }
    for (const NamedOutput& o : outputs) fixed_[static_cast<size_t>(o.edge.node)] = true;
    for (const StateUpdate& u : g.updates()) update_of_.emplace_back(u.value.node, u.state);
  }

  std::vector<int> run() {
    for (NodeId id = 0; id < static_cast<NodeId>(g_.size()); ++id) stage_[static_cast<size_t>(id)] = earliest(id);
    if (spec_.stages > 1) {
      for (NodeId id = static_cast<NodeId>(g_.size()); id-- > 0;) sink(id);
    }
    return stage_;
  }

 private:
  int earliest(NodeId id) const {
    const Node& n = g_.node(id);
    if (n.op == Op::Input) {
      auto it = spec_.stage_of.find(n.name);
      return it == spec_.stage_of.end() ? -1 : it->second;
    }
    int s = -1;
    for (const Edge& e : n.inputs) s = std::max(s, stage_[static_cast<size_t>(e.node)]);
    return s;
  }

  bool loadable(const Node& n) const { return n.op == Op::Input && !n.persistent; }

  void sink(NodeId id) {
    const Node& n = g_.node(id);
    int s = stage_[static_cast<size_t>(id)];
    if (!movable(id) || s < 0) return;
    int target = spec_.stages;
    for (NodeId c : consumers_[static_cast<size_t>(id)]) target = std::min(target, stage_[static_cast<size_t>(c)]);
    for (const auto& [value, state] : update_of_) {
      if (value == id) target = std::min(target, stage_[static_cast<size_t>(state)]);
    }
    if (target <= s || target == spec_.stages) return;
    std::vector<NodeId> moving{id};
    double cost = move_cost(id, target, moving, 0);
    if (cost > bytes_of(g_, n)) return;
    for (NodeId m : moving) stage_[static_cast<size_t>(m)] = target;
  }

  bool movable(NodeId id) const {
    const Node& n = g_.node(id);
    return n.op != Op::Input && n.op != Op::Constant && !fixed_[static_cast<size_t>(id)];
  }

  // Bytes stage `target` must receive to compute `id` there: each operand is
  // either sent, or (when only nodes moving with it read it) computed there
  // too, whichever costs less. `moving` collects the nodes that move.
  double move_cost(NodeId id, int target, std::vector<NodeId>& moving, int depth) {
    double cost = 0;
    for (const Edge& e : g_.node(id).inputs) {
      NodeId p = e.node;
      const Node& pn = g_.node(p);
      int ps = stage_[static_cast<size_t>(p)];
      if (ps < 0 || ps == target || std::find(moving.begin(), moving.end(), p) != moving.end()) continue;
      if (pn.persistent) return 1e300;  // a state is read on its own stage
      if (sent_anyway(p, target, moving)) continue;
      double send = bytes_of(g_, pn);
      if (depth < 16 && movable(p) && only_read_by(p, target, moving)) {
        std::vector<NodeId> with = moving;
        with.push_back(p);
        double move = move_cost(p, target, with, depth + 1);
        if (move < send) {
          moving = with;
          cost += move;
          continue;
        }
      }
      cost += send;
    }
    return cost;
  }

  // `p` reaches `target` anyway: another consumer there reads it (loadable inputs are loaded, not sent).
  bool sent_anyway(NodeId p, int target, const std::vector<NodeId>& moving) const {
    if (loadable(g_.node(p))) return false;
    for (NodeId c : consumers_[static_cast<size_t>(p)]) {
      if (stage_[static_cast<size_t>(c)] == target && std::find(moving.begin(), moving.end(), c) == moving.end()) return true;
    }
    return false;
  }

  bool only_read_by(NodeId p, int target, const std::vector<NodeId>& moving) const {
    for (NodeId c : consumers_[static_cast<size_t>(p)]) {
      if (stage_[static_cast<size_t>(c)] != target && std::find(moving.begin(), moving.end(), c) == moving.end()) return false;
    }
    return true;
  }

  const Graph& g_;
  const ParallelSpec& spec_;
  std::vector<int> stage_;
  std::vector<std::vector<NodeId>> consumers_;
  std::vector<bool> fixed_;
  std::vector<std::pair<NodeId, NodeId>> update_of_;
};

}  // namespace

std::vector<int> place_stages(const Graph& graph, const ParallelSpec& spec, const std::vector<NamedOutput>& outputs) {
  return Placer(graph, spec, outputs).run();
}

}  // namespace lumen::dist
