#include "lumen/passes/recompute.h"

#include <algorithm>

#include "lumen/core/error.h"
#include "lumen/core/tensor.h"

namespace lumen::passes {

namespace {

void check(const Graph& graph, const RecomputeRequest& request) {
  if (request.kept.size() != graph.size()) {
    fail("recompute: `kept` has ", request.kept.size(), " entries for a graph of ", graph.size(), " nodes");
  }
  if (request.from < 0 || static_cast<size_t>(request.from) > graph.size()) {
    fail("recompute: `from` is node ", request.from, ", outside a graph of ", graph.size(), " nodes");
  }
  for (NodeId v : request.values) {
    if (v < 0 || v >= request.from) {
      fail("recompute: value ", v, " is not a node before `from` (node ", request.from, "); only values made before ",
           "their late readers can be computed again");
    }
    if (graph.node(v).op == Op::Input) {
      fail("recompute: value ", v, " is the input '", graph.node(v).name, "', which nothing computes");
    }
  }
}

class Recomputer {
 public:
  Recomputer(const Graph& in, const RecomputeRequest& request) : in_(in), request_(request) {}

  Recomputation run(std::vector<Edge>& outputs) {
    for (const std::string& name : in_.dim_names()) out_.dim(name);
    find_copied();
    map_.assign(in_.size(), -1);
    copy_.assign(in_.size(), -1);
    for (size_t i = 0; i < in_.size(); ++i) {
      Node n = in_.nodes()[i];
      bool late = static_cast<NodeId>(i) >= request_.from;
      for (Edge& e : n.inputs) e = late ? late_read(e) : mapped(e);
      map_[i] = out_.add(std::move(n));
    }
    for (const DimConstraint& c : in_.constraints()) out_.require(c.condition, c.message);
    for (const NamedOutput& o : in_.outputs()) out_.mark_output(tensor(mapped(o.edge)), o.name);
    for (const StateUpdate& u : in_.updates())
      out_.assign(tensor(mapped(Edge{u.state, u.view})), tensor(late_read(u.value)));
    for (Edge& e : outputs) e = mapped(e);
    Recomputation r;
    for (NodeId v : request_.values) r.copies.push_back(copy_[static_cast<size_t>(v)]);
    r.copied_nodes = copied_nodes_;
    r.graph = std::move(out_);
    return r;
  }

 private:
  // A node is copied for late readers when it is a requested value, or is not
  // kept and reads (through other such nodes) a requested value.
  void find_copied() {
    copied_.assign(in_.size(), false);
    for (NodeId v : request_.values) copied_[static_cast<size_t>(v)] = true;
    for (size_t i = 0; i < static_cast<size_t>(request_.from); ++i) {
      const Node& n = in_.nodes()[i];
      if (copied_[i] || kept(static_cast<NodeId>(i))) continue;
      copied_[i] = std::any_of(n.inputs.begin(), n.inputs.end(),
                               [&](const Edge& e) { return copied_[static_cast<size_t>(e.node)]; });
    }
  }

  Edge mapped(const Edge& e) const { return Edge{map_.at(static_cast<size_t>(e.node)), e.view}; }
  Tensor tensor(const Edge& e) { return Tensor(&out_, e.node, e.view); }

  Edge late_read(const Edge& e) {
    auto x = static_cast<size_t>(e.node);
    if (x >= copied_.size() || !copied_[x]) return mapped(e);
    return Edge{copy_of(e.node), e.view};
  }

  bool kept(NodeId x) const { return request_.kept[static_cast<size_t>(x)] || in_.node(x).op == Op::Input; }

  // The copy of `x`, added on first use (so just before its first late
  // reader). It reads kept values as they are and copies every other input,
  // so nothing of the original is inlined into the late readers' kernels.
  NodeId copy_of(NodeId x) {
    auto i = static_cast<size_t>(x);
    if (copy_[i] >= 0) return copy_[i];
    Node n = in_.node(x);
    for (Edge& e : n.inputs)
      e = copied_[static_cast<size_t>(e.node)] || !kept(e.node) ? Edge{copy_of(e.node), e.view} : mapped(e);
    copy_[i] = out_.add(std::move(n));
    ++copied_nodes_;
    return copy_[i];
  }

  const Graph& in_;
  const RecomputeRequest& request_;
  Graph out_;
  std::vector<bool> copied_;  // node of `in_` -> late readers read a copy of it
  std::vector<NodeId> map_;   // node of `in_` -> the original in `out_`
  std::vector<NodeId> copy_;  // node of `in_` -> its copy in `out_` (-1: none yet)
  int copied_nodes_ = 0;
};

}  // namespace

Recomputation recompute(const Graph& graph, const RecomputeRequest& request, std::vector<Edge>& outputs) {
  check(graph, request);
  return Recomputer(graph, request).run(outputs);
}

}  // namespace lumen::passes
