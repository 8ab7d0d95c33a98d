#include "lumen/dist/propagate.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "lumen/core/error.h"
#include "lumen/dist/placement.h"
#include "lumen/dist/view_split.h"

namespace lumen::dist {

const char* comm_kind_name(CommKind kind) {
  switch (kind) {
    case CommKind::AllReduce: return "all-reduce";
    case CommKind::AllGather: return "all-gather";
    case CommKind::Transfer: return "transfer";
  }
  return "?";
}

Shape local_shape(const Node& node, const Sharding& sharding, int shards) {
  if (!sharding.is_split() || shards == 1) return node.shape;
  return split_shape(node.shape, sharding.axis, shards);
}

int ShardedGraph::levels() const {
  int most = 0;
  for (const NodePlan& n : nodes) most = std::max(most, n.level);
  return most + 1;
}

std::string ShardedGraph::summary() const {
  int split = 0, partial = 0;
  for (const NodePlan& n : nodes) {
    split += n.sharding.is_split() ? 1 : 0;
    partial += n.sharding.is_partial() ? 1 : 0;
  }
  int count[3] = {0, 0, 0};
  for (const CommPoint& c : comms) ++count[static_cast<int>(c.kind)];
  std::ostringstream s;
  s << split << " nodes split, " << partial << " partial; " << count[0] << " all-reduce, " << count[1] << " all-gather, "
    << count[2] << " transfer; " << levels() << " levels";
  return s.str();
}

namespace {

// One operand as its consumer sees it.
struct Operand {
  Sharding source;                       // the producer's sharding
  std::optional<SplitThrough> through;   // a split producer whose split shows through the edge's view
};

class Propagator {
 public:
  Propagator(const Graph& g, const ParallelSpec& spec, const std::vector<NamedOutput>& outputs) : g_(g) {
    out_.spec = spec;
    out_.output_edges = outputs.empty() ? g.outputs() : outputs;
    out_.nodes.resize(g.size());
  }

  ShardedGraph run() {
    check_spec();
    stages_ = place_stages(g_, out_.spec, out_.output_edges);
    for (NodeId id = 0; id < static_cast<NodeId>(g_.size()); ++id) visit(id);
    for (const NamedOutput& o : out_.output_edges) {
      int stage = out_.nodes[static_cast<size_t>(o.edge.node)].stage;
      if (stage < 0) stage = out_.spec.stages - 1;
      out_.output_stage.push_back(stage);
      out_.outputs.push_back(finish(whole(o.edge, -1), stage));
    }
    for (const StateUpdate& u : g_.updates()) plan_update(u);
    return std::move(out_);
  }

 private:
  int shards() const { return out_.spec.shards; }
  NodePlan& plan(NodeId id) { return out_.nodes[static_cast<size_t>(id)]; }

  void check_spec() const {
    const ParallelSpec& s = out_.spec;
    if (s.stages < 1 || s.shards < 1) fail("dist: a plan needs at least one stage and one shard, got ", s.stages, " and ", s.shards);
    if (s.stages > 1 && s.shards > 1) {
      fail("dist: pipeline stages combined with sharding (", s.stages, " stages x ", s.shards,
           " shards) is not supported; use one or the other");
    }
    for (NodeId id : g_.input_ids()) {
      if (g_.node(id).name.rfind("dist.", 0) == 0) {
        fail("dist: input '", g_.node(id).name, "': names starting with 'dist.' are reserved for communication");
      }
    }
    for (const auto& [name, sharding] : s.shardings) {
      NodeId id = g_.find_input(name);
      if (id < 0) fail("dist: the plan shards '", name, "', which is no input of the graph");
      const Node& n = g_.node(id);
      if (sharding.is_partial()) fail("dist: input '", name, "' cannot be annotated partial (only replicated or split)");
      if (!sharding.is_split()) continue;
      if (sharding.axis < 0 || static_cast<size_t>(sharding.axis) >= n.shape.size()) {
        fail("dist: the plan splits '", name, "' ", to_string(n.shape), " along axis ", sharding.axis, ", which it does not have");
      }
      const Expr& d = n.shape[static_cast<size_t>(sharding.axis)];
      if (!d.is_const() || d.value() % s.shards != 0) {
        fail("dist: the plan splits '", name, "' ", to_string(n.shape), " along axis ", sharding.axis, " into ", s.shards,
             " shards, but that dim (", d, ") is not a constant multiple of ", s.shards);
      }
    }
    for (const auto& [name, stage] : s.stage_of) {
      if (g_.find_input(name) < 0) fail("dist: the plan places '", name, "', which is no input of the graph, on a stage");
      if (stage < 0 || stage >= s.stages) fail("dist: input '", name, "' is placed on stage ", stage, " of ", s.stages);
    }
    if (s.stages > 1) {
      for (NodeId id : g_.state_ids()) {
        if (!s.stage_of.count(g_.node(id).name)) {
          fail("dist: state '", g_.node(id).name, "' has no pipeline stage; a pipeline plan must place every state");
        }
      }
    }
  }

  Operand read(const Edge& e) {
    Operand o;
    o.source = plan(e.node).sharding;
    if (o.source.is_split()) o.through = split_through(e.view, o.source.axis, shards());
    return o;
  }

  // The comm that makes `source` replicated (all-reduce or all-gather), shared by its consumers.
  int replicate(NodeId source) {
    const Sharding& s = plan(source).sharding;
    if (s.is_replicated()) return -1;
    CommKind kind = s.is_split() ? CommKind::AllGather : CommKind::AllReduce;
    return comm(kind, source, s, 0);
  }

  int comm(CommKind kind, NodeId source, const Sharding& s, int to_stage) {
    auto key = std::make_tuple(static_cast<int>(kind), source, to_stage);
    auto it = comm_ids_.find(key);
    if (it != comm_ids_.end()) return it->second;
    CommPoint c;
    c.kind = kind;
    c.source = source;
    c.reduce = s.reduce;
    c.axis = s.axis;
    c.from_stage = plan(source).stage;
    c.to_stage = to_stage;
    c.level = plan(source).level;
    out_.comms.push_back(c);
    int index = static_cast<int>(out_.comms.size()) - 1;
    comm_ids_[key] = index;
    return index;
  }

  EdgePlan whole(const Edge& e, int slice_axis) {
    EdgePlan p;
    p.source = e.node;
    p.view = e.view;
    p.comm = replicate(e.node);
    p.slice_axis = slice_axis;
    return p;
  }

  EdgePlan mapped(const Edge& e, const SplitThrough& through) {
    EdgePlan p;
    p.source = e.node;
    p.view = e.view;
    p.local_view = through.local;
    for (const Expr& c : through.conditions) out_.conditions.push_back(c);
    return p;
  }

  EdgePlan direct(const Edge& e) {
    EdgePlan p;
    p.source = e.node;
    p.view = e.view;
    return p;
  }

  // Adds a stage transfer where the reader's stage differs from the producer's, and the edge's level.
  EdgePlan finish(EdgePlan p, int stage) {
    const Node& src = g_.node(p.source);
    const NodePlan& sp = plan(p.source);
    bool loadable = src.op == Op::Input && !src.persistent;  // every stage loads its own copy
    if (stage >= 0 && sp.stage >= 0 && sp.stage != stage && !loadable) {
      p.comm = comm(CommKind::Transfer, p.source, sp.sharding, stage);
    }
    p.level = p.comm >= 0 ? out_.comms[static_cast<size_t>(p.comm)].level + 1 : sp.level;
    return p;
  }

  void visit(NodeId id) {
    const Node& n = g_.node(id);
    NodePlan& p = plan(id);
    if (n.op == Op::Input) {
      auto s = out_.spec.shardings.find(n.name);
      if (s != out_.spec.shardings.end() && shards() > 1) p.sharding = s->second;
      p.stage = stages_[static_cast<size_t>(id)];
      return;
    }
    if (n.op == Op::Constant) return;
    std::vector<Operand> ops;
    for (const Edge& e : n.inputs) ops.push_back(read(e));
    if (n.op == Op::Gather) {
      plan_gather(n, ops, p);
    } else if (is_reduce(n.op)) {
      plan_reduce(n, ops[0], p);
    } else {
      plan_elementwise(n, ops, p);
    }
    int stage = stages_[static_cast<size_t>(id)];
    p.stage = stage;
    p.level = 0;
    for (EdgePlan& e : p.inputs) {
      e = finish(std::move(e), stage);
      p.level = std::max(p.level, e.level);
    }
  }

  void plan_elementwise(const Node& n, const std::vector<Operand>& ops, NodePlan& p) {
    int d = -1;
    for (const Operand& o : ops) {
      if (o.through) {
        d = o.through->axis;
        break;
      }
    }
    if (d >= 0) {
      for (size_t i = 0; i < ops.size(); ++i) {
        bool keep = ops[i].through && ops[i].through->axis == d;
        p.inputs.push_back(keep ? mapped(n.inputs[i], *ops[i].through) : whole(n.inputs[i], d));
      }
      p.sharding = Sharding::split(d);
      return;
    }
    if (auto op = stays_partial(n, ops)) {
      for (size_t i = 0; i < ops.size(); ++i) {
        p.inputs.push_back(ops[i].source.is_partial() ? direct(n.inputs[i]) : whole(n.inputs[i], -1));
      }
      p.sharding = Sharding::partial(*op);
      return;
    }
    for (const Edge& e : n.inputs) p.inputs.push_back(whole(e, -1));
  }

  // Linear maps of partial values stay partial: a copy, a sum of partial
  // sums, a partial sum times replicated values.
  static std::optional<ReduceOp> stays_partial(const Node& n, const std::vector<Operand>& ops) {
    int partial = 0;
    for (const Operand& o : ops) partial += o.source.is_partial() ? 1 : 0;
    if (partial == 0) return std::nullopt;
    ReduceOp first = ReduceOp::Sum;
    for (const Operand& o : ops) {
      if (o.source.is_partial()) {
        first = o.source.reduce;
        break;
      }
    }
    if (n.op == Op::Contiguous) return first;
    if (first != ReduceOp::Sum) return std::nullopt;
    bool all_sums = std::all_of(ops.begin(), ops.end(), [](const Operand& o) {
      return o.source.is_partial() && o.source.reduce == ReduceOp::Sum;
    });
    if (n.op == Op::Add && all_sums) return ReduceOp::Sum;
    if (n.op == Op::Mul && partial == 1 && is_float(n.dtype)) {
      bool others_replicated = std::all_of(ops.begin(), ops.end(), [](const Operand& o) {
        return o.source.is_partial() || o.source.is_replicated();
      });
      if (others_replicated) return ReduceOp::Sum;
    }
    return std::nullopt;
  }

  void plan_reduce(const Node& n, const Operand& o, NodePlan& p) {
    ReduceOp op = n.op == Op::SumReduce ? ReduceOp::Sum : ReduceOp::Max;
    const Edge& e = n.inputs[0];
    if (o.through) {
      p.inputs.push_back(mapped(e, *o.through));
      int d = o.through->axis;
      if (d == n.axis) {
        p.sharding = Sharding::partial(op);
      } else {
        p.sharding = Sharding::split(d > n.axis ? d - 1 : d);
      }
      return;
    }
    if (o.source.is_partial() && o.source.reduce == op) {
      p.inputs.push_back(direct(e));
      p.sharding = Sharding::partial(op);
      return;
    }
    p.inputs.push_back(whole(e, -1));
  }

  void plan_gather(const Node& n, const std::vector<Operand>& ops, NodePlan& p) {
    const Edge& data = n.inputs[0];
    const Edge& indices = n.inputs[1];
    int index_rank = static_cast<int>(indices.view.rank());
    if (ops[0].through && ops[0].through->axis != n.axis) {
      int d = ops[0].through->axis;
      p.inputs = {mapped(data, *ops[0].through), whole(indices, -1)};
      p.sharding = Sharding::split(d < n.axis ? d : d + index_rank - 1);
      return;
    }
    if (ops[1].through) {
      p.inputs = {whole(data, -1), mapped(indices, *ops[1].through)};
      p.sharding = Sharding::split(n.axis + ops[1].through->axis);
      return;
    }
    p.inputs = {whole(data, -1), whole(indices, -1)};
  }

  void plan_update(const StateUpdate& u) {
    const Node& state = g_.node(u.state);
    const NodePlan& sp = plan(u.state);
    UpdatePlan up;
    if (sp.sharding.is_split()) {
      auto target = split_through(u.view, sp.sharding.axis, shards());
      if (!target) {
        fail("dist: state '", state.name, "' is split along axis ", sp.sharding.axis, " but an update writes it through view ",
             u.view.to_string(), ", which does not keep that split; replicate the state or split another axis");
      }
      for (const Expr& c : target->conditions) out_.conditions.push_back(c);
      up.local_target = target->local;
      Operand v = read(u.value);
      bool keep = v.through && v.through->axis == target->axis;
      up.value = keep ? mapped(u.value, *v.through) : whole(u.value, target->axis);
    } else {
      up.value = whole(u.value, -1);
    }
    up.value = finish(std::move(up.value), sp.stage);
    out_.updates.push_back(std::move(up));
  }

  const Graph& g_;
  ShardedGraph out_;
  std::map<std::tuple<int, NodeId, int>, int> comm_ids_;
  std::vector<int> stages_;
};

}  // namespace

ShardedGraph propagate(const Graph& graph, const ParallelSpec& spec, const std::vector<NamedOutput>& outputs) {
  return Propagator(graph, spec, outputs).run();
}

}  // namespace lumen::dist
