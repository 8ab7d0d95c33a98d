#include "lumen/dist/segments.h"

#include <algorithm>
#include <map>
#include <set>

#include "lumen/core/error.h"
#include "lumen/core/tensor.h"

namespace lumen::dist {

std::string value_name(NodeId local) { return "dist.v" + std::to_string(local); }
std::string output_name(const std::string& name) { return "dist.out:" + name; }

namespace {

bool is_source(const Node& n) { return n.op == Op::Input || n.op == Op::Constant; }

int64_t static_bytes(const Shape& shape, DType dtype) {
  int64_t n = 1;
  for (const Expr& d : shape) {
    if (!d.is_const()) return -1;
    n *= d.value();
  }
  return n * static_cast<int64_t>(dtype_size(dtype));
}

class Cutter {
 public:
  Cutter(const LocalGraph& local, int64_t bucket_bytes) : l_(local), bucket_bytes_(bucket_bytes) {
    key_.assign(local.graph.size(), SegmentKey{-1, -1});
  }

  SegmentPlan run() {
    assign_parts();
    place_outputs_and_updates();
    std::set<SegmentKey> keys;
    for (NodeId id = 0; id < static_cast<NodeId>(l_.graph.size()); ++id) {
      if (!is_source(node(id))) keys.insert(key_[static_cast<size_t>(id)]);
    }
    for (const auto& [k, unused] : outputs_at_) keys.insert(k);
    for (const auto& [k, unused] : updates_at_) keys.insert(k);
    find_exports();
    for (const SegmentKey& k : keys) plan_.segments.push_back(build(k));
    return std::move(plan_);
  }

 private:
  const Node& node(NodeId id) const { return l_.graph.node(id); }
  int level(NodeId id) const { return l_.level[static_cast<size_t>(id)]; }

  // Groups of this level's comms (bucketing same-typed all-reduces) and the parts feeding them.
  void assign_parts() {
    std::map<int, std::vector<int>> by_level;
    for (size_t k = 0; k < l_.comms.size(); ++k) {
      if (l_.comms[k].source >= 0) by_level[l_.comms[k].point.level].push_back(static_cast<int>(k));
    }
    for (const auto& [lvl, comms] : by_level) {
      std::vector<std::vector<int>> groups;
      int64_t bytes = 0;
      for (int k : comms) {
        const LocalComm& c = l_.comms[static_cast<size_t>(k)];
        int64_t b = static_bytes(c.source_shape, c.dtype);
        bool joins = !groups.empty() && c.point.kind == CommKind::AllReduce && b >= 0 && bytes >= 0 && bytes < bucket_bytes_;
        if (joins) {
          const LocalComm& head = l_.comms[static_cast<size_t>(groups.back()[0])];
          joins = head.point.kind == CommKind::AllReduce && head.dtype == c.dtype && head.point.reduce == c.point.reduce;
        }
        if (joins) {
          groups.back().push_back(k);
          bytes += b;
        } else {
          groups.push_back({k});
          bytes = c.point.kind == CommKind::AllReduce ? b : -1;
        }
      }
      for (size_t g = 0; g < groups.size(); ++g) {
        CommGroup group;
        group.comms = groups[g];
        SegmentKey after{lvl, -1};
        for (int k : groups[g]) {
          NodeId src = l_.comms[static_cast<size_t>(k)].source;
          mark(src, lvl, static_cast<int>(g));
          if (!is_source(node(src))) after = std::max(after, key_[static_cast<size_t>(src)]);
        }
        group.after = after;
        plan_.groups.push_back(group);
      }
      parts_[lvl] = static_cast<int>(groups.size());
    }
    for (NodeId id = 0; id < static_cast<NodeId>(l_.graph.size()); ++id) {
      if (is_source(node(id)) || key_[static_cast<size_t>(id)].first >= 0) continue;
      key_[static_cast<size_t>(id)] = tail(level(id));
    }
    std::stable_sort(plan_.groups.begin(), plan_.groups.end(),
                     [](const CommGroup& a, const CommGroup& b) { return a.after < b.after; });
  }

  // The not-yet-assigned computed ancestors of `id` at `lvl` join part `part`.
  void mark(NodeId id, int lvl, int part) {
    std::vector<NodeId> stack{id};
    while (!stack.empty()) {
      NodeId n = stack.back();
      stack.pop_back();
      if (is_source(node(n)) || level(n) != lvl || key_[static_cast<size_t>(n)].first >= 0) continue;
      key_[static_cast<size_t>(n)] = {lvl, part};
      for (const Edge& e : node(n).inputs) stack.push_back(e.node);
    }
  }

  // The part of a level after all its comm groups' parts.
  SegmentKey tail(int lvl) const {
    auto it = parts_.find(lvl);
    return {lvl, it == parts_.end() ? 0 : it->second};
  }

  SegmentKey key_of_value(NodeId id, int lvl) const {
    return is_source(node(id)) ? tail(lvl) : key_[static_cast<size_t>(id)];
  }

  void place_outputs_and_updates() {
    for (size_t k = 0; k < l_.outputs.size(); ++k) {
      const LocalOutput& o = l_.outputs[k];
      if (o.edge) outputs_at_[key_of_value(o.edge->node, o.level)].push_back(k);
    }
    const auto& updates = l_.graph.updates();
    for (size_t u = 0; u < updates.size(); ++u) {
      SegmentKey k = key_of_value(updates[u].value.node, l_.update_level[u]);
      for (NodeId id = 0; id < static_cast<NodeId>(l_.graph.size()); ++id) {  // after every read of the old state
        if (is_source(node(id))) continue;
        for (const Edge& e : node(id).inputs) {
          if (e.node == updates[u].state) k = std::max(k, key_[static_cast<size_t>(id)]);
        }
      }
      updates_at_[k].push_back(u);
    }
  }

  void find_exports() {
    exported_.assign(l_.graph.size(), false);
    auto reads = [&](NodeId id, const SegmentKey& at) {
      if (!is_source(node(id)) && key_[static_cast<size_t>(id)] != at) exported_[static_cast<size_t>(id)] = true;
    };
    for (NodeId id = 0; id < static_cast<NodeId>(l_.graph.size()); ++id) {
      if (is_source(node(id))) continue;
      for (const Edge& e : node(id).inputs) reads(e.node, key_[static_cast<size_t>(id)]);
    }
    for (const LocalComm& c : l_.comms) {
      if (c.source >= 0 && !is_source(node(c.source))) exported_[static_cast<size_t>(c.source)] = true;
    }
    for (const auto& [k, list] : outputs_at_) {
      for (size_t o : list) reads(l_.outputs[o].edge->node, k);
    }
    for (const auto& [k, list] : updates_at_) {
      for (size_t u : list) reads(l_.graph.updates()[u].value.node, k);
    }
  }

  Segment build(const SegmentKey& k) {
    Segment s;
    s.key = k;
    for (const std::string& d : l_.graph.dim_names()) s.graph.dim(d);
    std::map<NodeId, NodeId> here;
    auto import = [&](NodeId id) -> NodeId {
      auto it = here.find(id);
      if (it != here.end()) return it->second;
      const Node& n = node(id);
      NodeId made;
      if (is_source(n)) {
        made = s.graph.add(n);
        if (n.op == Op::Input && n.persistent) s.states.push_back(n.name);
        for (size_t c = 0; c < l_.comms.size(); ++c) {
          if (l_.comms[c].result == id) s.comms_in.push_back(static_cast<int>(c));
        }
      } else {
        if (key_[static_cast<size_t>(id)] >= k) fail("dist: internal: segment ", k.first, ".", k.second, " reads a later value");
        Node in;
        in.op = Op::Input;
        in.dtype = n.dtype;
        in.shape = n.shape;
        in.name = value_name(id);
        made = s.graph.add(std::move(in));
        s.values_in.push_back(value_name(id));
      }
      here[id] = made;
      return made;
    };
    for (NodeId id = 0; id < static_cast<NodeId>(l_.graph.size()); ++id) {
      if (is_source(node(id)) || key_[static_cast<size_t>(id)] != k) continue;
      Node copy = node(id);
      for (Edge& e : copy.inputs) e.node = import(e.node);
      here[id] = s.graph.add(std::move(copy));
      if (exported_[static_cast<size_t>(id)]) {
        s.graph.mark_output(s.graph.tensor(here[id]), value_name(id));
        s.values_out.push_back(value_name(id));
      }
    }
    for (size_t o : outputs_at_[k]) {
      const Edge& e = *l_.outputs[o].edge;
      s.graph.mark_output(Tensor(&s.graph, import(e.node), e.view), output_name(l_.outputs[o].name));
      s.outputs.push_back(l_.outputs[o].name);
    }
    for (size_t u : updates_at_[k]) {
      const StateUpdate& up = l_.graph.updates()[u];
      NodeId state = import(up.state);
      NodeId value = import(up.value.node);
      s.graph.assign(Tensor(&s.graph, state, up.view), Tensor(&s.graph, value, up.value.view));
    }
    return s;
  }

  const LocalGraph& l_;
  int64_t bucket_bytes_;
  SegmentPlan plan_;
  std::vector<SegmentKey> key_;
  std::vector<bool> exported_;
  std::map<SegmentKey, std::vector<size_t>> outputs_at_, updates_at_;
  std::map<int, int> parts_;  // level -> comm groups started in it
};

}  // namespace

SegmentPlan cut_segments(const LocalGraph& local, int64_t bucket_bytes) { return Cutter(local, bucket_bytes).run(); }

}  // namespace lumen::dist
