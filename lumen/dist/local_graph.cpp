#include "lumen/dist/local_graph.h"

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/core/tensor.h"
#include "lumen/dist/view_split.h"

namespace lumen::dist {

std::string comm_input_name(int index) { return "dist.comm" + std::to_string(index); }

namespace {

std::string describe(const Node& n, NodeId id) {
  std::string what = op_name(n.op);
  if (!n.name.empty()) what += " '" + n.name + "'";
  return what + " (node " + std::to_string(id) + ", " + to_string(n.shape) + ")";
}

class Localizer {
 public:
  Localizer(const Graph& global, const ShardedGraph& plan, int rank) : g_(global), plan_(plan) {
    int shards = plan.spec.shards;
    if (rank < 0 || rank >= plan.spec.ranks()) fail("dist: rank ", rank, " is outside the plan's ", plan.spec.ranks(), " ranks");
    out_.rank = rank;
    out_.stage = rank / shards;
    out_.shard = rank % shards;
    local_.assign(global.size(), -1);
    comm_result_.assign(plan.comms.size(), -1);
    for (const std::string& d : global.dim_names()) out_.graph.dim(d);
  }

  LocalGraph run() {
    for (NodeId id = 0; id < static_cast<NodeId>(g_.size()); ++id) {
      int stage = plan_.nodes[static_cast<size_t>(id)].stage;
      if (stage == out_.stage) ensure(id);
    }
    for (size_t k = 0; k < plan_.output_edges.size(); ++k) {
      LocalOutput o;
      o.name = plan_.output_edges[k].name;
      o.stage = plan_.output_stage[k];
      o.level = plan_.outputs[k].level;
      if (o.stage == out_.stage) o.edge = edge(plan_.outputs[k]);
      out_.outputs.push_back(o);
    }
    for (size_t k = 0; k < g_.updates().size(); ++k) add_update(g_.updates()[k], plan_.updates[k]);
    add_comms();
    return std::move(out_);
  }

 private:
  NodeId ensure(NodeId id) {
    NodeId& l = local_[static_cast<size_t>(id)];
    if (l >= 0) return l;
    const Node& n = g_.node(id);
    const NodePlan& p = plan_.nodes[static_cast<size_t>(id)];
    if (p.stage >= 0 && p.stage != out_.stage && !(n.op == Op::Input && !n.persistent)) {
      fail("dist: internal: ", describe(n, id), " runs on stage ", p.stage, " but is read on stage ", out_.stage,
           " without a transfer");
    }
    Node copy = n;
    copy.shape = local_shape(n, p.sharding, plan_.spec.shards);
    copy.inputs.clear();
    for (const EdgePlan& e : p.inputs) copy.inputs.push_back(edge(e));
    l = out_.graph.add(std::move(copy));
    out_.level.push_back(p.level);
    if (n.op == Op::Input) {
      out_.input_sharding[n.name] = p.sharding;
      out_.input_global_shape[n.name] = n.shape;
    }
    return l;
  }

  NodeId comm_result(int index) {
    NodeId& r = comm_result_[static_cast<size_t>(index)];
    if (r >= 0) return r;
    const CommPoint& c = plan_.comms[static_cast<size_t>(index)];
    const Node& src = g_.node(c.source);
    Node in;
    in.op = Op::Input;
    in.dtype = src.dtype;
    // All-reduce and all-gather results are whole; a transfer carries the sender's local layout.
    in.shape = c.kind == CommKind::Transfer ? local_shape(src, plan_.nodes[static_cast<size_t>(c.source)].sharding, plan_.spec.shards)
                                            : src.shape;
    in.name = comm_input_name(index);
    r = out_.graph.add(std::move(in));
    out_.level.push_back(c.level + 1);
    return r;
  }

  Edge edge(const EdgePlan& e) {
    if (e.comm >= 0) return sliced(Edge{comm_result(e.comm), e.view}, e.slice_axis);
    NodeId source = ensure(e.source);
    if (e.local_view) return Edge{source, *e.local_view};
    return sliced(Edge{source, e.view}, e.slice_axis);
  }

  // A whole value read by a split consumer: this shard's chunk of `axis`.
  Edge sliced(Edge e, int axis) const {
    if (axis < 0) return e;
    int shards = plan_.spec.shards;
    Shape chunk = split_shape(e.view.shape(), axis, shards);
    const Expr& w = chunk[static_cast<size_t>(axis)];
    e.view = e.view.slice(axis, simplify(w * Expr(out_.shard)), simplify(w * Expr(out_.shard + 1)));
    return e;
  }

  void add_update(const StateUpdate& u, const UpdatePlan& p) {
    const NodePlan& sp = plan_.nodes[static_cast<size_t>(u.state)];
    if (sp.stage >= 0 && sp.stage != out_.stage) return;  // another stage's state
    NodeId state = ensure(u.state);
    Edge value = edge(p.value);
    View target = p.local_target ? *p.local_target : u.view;
    out_.graph.assign(Tensor(&out_.graph, state, target), Tensor(&out_.graph, value.node, value.view));
    out_.update_level.push_back(p.value.level);
  }

  void add_comms() {
    for (size_t k = 0; k < plan_.comms.size(); ++k) {
      const CommPoint& c = plan_.comms[k];
      LocalComm lc;
      lc.index = static_cast<int>(k);
      lc.point = c;
      const Node& src = g_.node(c.source);
      const NodePlan& sp = plan_.nodes[static_cast<size_t>(c.source)];
      lc.dtype = src.dtype;
      lc.name = describe(src, c.source);
      bool sends = c.kind == CommKind::Transfer ? c.from_stage == out_.stage : (sp.stage < 0 || sp.stage == out_.stage);
      bool receives = comm_result_[k] >= 0;
      if (!sends && !receives) continue;
      if (sends) {
        lc.source = ensure(c.source);
        lc.source_shape = out_.graph.node(lc.source).shape;
      }
      if (receives) {
        lc.result = comm_result_[k];
        lc.result_shape = out_.graph.node(lc.result).shape;
      }
      out_.comms.push_back(lc);
    }
  }

  const Graph& g_;
  const ShardedGraph& plan_;
  LocalGraph out_;
  std::vector<NodeId> local_;
  std::vector<NodeId> comm_result_;
};

}  // namespace

LocalGraph localize(const Graph& global, const ShardedGraph& plan, int rank) { return Localizer(global, plan, rank).run(); }

}  // namespace lumen::dist
