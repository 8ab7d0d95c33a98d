#include "lumen/kernel/independent_axes.h"

#include "lumen/kernel/known_region.h"

#include <algorithm>
#include <unordered_map>

#include "lumen/core/expr_eval.h"
#include "lumen/core/simplify.h"
#include "lumen/kernel/two_place_gather.h"

namespace lumen::kernel {

namespace {

bool mentions(const Expr& e, const Expr& var) {
  std::vector<Expr> vars = expr_vars(e);
  return std::find(vars.begin(), vars.end(), var) != vars.end();
}

// Where the consumer's coordinates sit among the coordinates of its input
// edges: a reduction's input has the reduced axis inserted.
int input_position(const Node& consumer, int dim) {
  if (dim < 0) return -1;
  if (is_reduce(consumer.op) && dim >= consumer.axis) return dim + 1;
  return dim;
}

class Analysis {
 public:
  Analysis(const Graph& graph, const std::vector<bool>& materialized, const std::vector<NodeId>& members)
      : graph_(graph), materialized_(materialized), members_(members) {}

  GroupAxes run() {
    const Node& last = graph_.node(members_.back());
    out_.extents = last.shape;
    size_t axes = last.shape.size();
    out_.independent.assign(axes, true);
    for (size_t a = 0; a < axes; ++a) {
      if (!last.shape[a].is_const() || last.shape[a].value() < 2) out_.independent[a] = false;
    }
    find_closure();
    if (!out_.why_not.empty()) return out_;
    std::vector<int> identity(axes);
    for (size_t a = 0; a < axes; ++a) identity[a] = static_cast<int>(a);
    out_.dims[members_.back()] = identity;
    for (size_t i = out_.closure.size(); i-- > 0;) {
      NodeId n = out_.closure[i];
      auto it = out_.dims.find(n);
      if (it == out_.dims.end()) {
        out_.why_not = "node " + std::to_string(n) + " is not read inside the group";
        return out_;
      }
      follow_inputs(n, it->second);
      if (!out_.why_not.empty()) return out_;
    }
    return out_;
  }

 private:
  // The nodes each member's kernel computes: the member and the producers it
  // inlines, up to materialised buffers.
  void find_closure() {
    out_.member_nodes.resize(members_.size());
    out_.external.resize(members_.size());
    std::vector<NodeId> all;
    for (size_t m = 0; m < members_.size(); ++m) {
      std::vector<NodeId> stack{members_[m]};
      std::vector<NodeId>& mine = out_.member_nodes[m];
      while (!stack.empty()) {
        NodeId n = stack.back();
        stack.pop_back();
        if (std::find(mine.begin(), mine.end(), n) != mine.end()) continue;
        mine.push_back(n);
        const Node& node = graph_.node(n);
        if (node.op == Op::Gather && !two_place(n)) {
          out_.why_not = "a gather (data-dependent read) is computed in the group";
          return;
        }
        for (const Edge& e : node.inputs) {
          if (!materialized_[static_cast<size_t>(e.node)]) stack.push_back(e.node);
        }
      }
      std::sort(mine.begin(), mine.end());
      all.insert(all.end(), mine.begin(), mine.end());
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    out_.closure = all;
  }

  // A gather that reads one of two places known without the data (where()),
  // with its table computed in the group and its index built from constants
  // that chunk copies can compute at chunk-relative coordinates.
  bool two_place(NodeId n) const {
    const Node& node = graph_.node(n);
    if (!two_places(graph_, n, materialized_) || two_place_index_constants(graph_, n, materialized_).empty()) return false;
    return !materialized_[static_cast<size_t>(node.inputs[0].node)] || is_member(node.inputs[0].node);
  }

  bool is_member(NodeId n) const { return std::find(members_.begin(), members_.end(), n) != members_.end(); }

  void follow_inputs(NodeId n, const std::vector<int>& dims) {
    const Node& node = graph_.node(n);
    if (node.op == Op::Gather) {  // a two-place gather (find_closure): its table at both places
      TwoPlaces places = *two_places(graph_, n, materialized_);
      std::vector<Expr> x = loop_indices(node.shape);
      const Edge& table = node.inputs[0];
      std::vector<int> unset = producer_dims(node, dims, table, x, table.view.index({places.unset}));
      std::vector<int> set = producer_dims(node, dims, table, x, table.view.index({places.set}));
      for (size_t a = 0; a < dims.size(); ++a) {
        if (unset[a] != set[a]) drop(a);
      }
      record_dims(table.node, unset);
      const Edge& index = node.inputs[1];
      std::vector<Expr> xi = loop_indices(index.view.shape());
      map_producer(node, dims, index, xi, index.view.index(xi));
      return;
    }
    for (const Edge& e : node.inputs) {
      std::vector<Expr> x = loop_indices(e.view.shape());
      View::Index vi = e.view.index(x);
      bool inside = !materialized_[static_cast<size_t>(e.node)] || is_member(e.node);
      if (inside) {
        map_producer(node, dims, e, x, vi);
      } else {
        record_external(n, node, dims, e, x, vi);
      }
    }
  }

  void drop(size_t axis) { out_.independent[axis] = false; }

  // The producer's dims carrying each axis, from the coordinates the edge reads.
  void map_producer(const Node& consumer, const std::vector<int>& dims, const Edge& e, const std::vector<Expr>& x,
                    const View::Index& vi) {
    record_dims(e.node, producer_dims(consumer, dims, e, x, vi));
  }

  // The producer's dims at the coordinates `vi` reads, with x the consumer's
  // coordinates along the edge.
  std::vector<int> producer_dims(const Node& consumer, const std::vector<int>& dims, const Edge& e,
                                 const std::vector<Expr>& x, const View::Index& vi) {
    const Node& producer = graph_.node(e.node);
    std::vector<Expr> p = unflatten(vi.index, producer.shape);
    std::vector<int> found(dims.size(), -1);
    for (size_t a = 0; a < dims.size(); ++a) {
      int at = input_position(consumer, dims[a]);
      if (at < 0) continue;
      const Expr& var = x[static_cast<size_t>(at)];
      Expr extent = consumer.op == Op::Gather ? consumer.shape[static_cast<size_t>(at)] : e.view.shape()[static_cast<size_t>(at)];
      if (mentions(vi.valid, var)) drop(a);
      for (size_t d = 0; d < p.size(); ++d) {
        bool same = p[d] == var && simplify(producer.shape[d]) == simplify(extent);
        if (same && found[a] < 0) {
          found[a] = static_cast<int>(d);
        } else if (mentions(p[d], var)) {
          drop(a);
        }
      }
    }
    return found;
  }

  void record_dims(NodeId producer, const std::vector<int>& found) {
    auto [it, fresh] = out_.dims.emplace(producer, found);
    if (fresh) return;
    for (size_t a = 0; a < found.size(); ++a) {
      if (it->second[a] != found[a]) drop(a);  // read along the axis by one consumer, at a fixed place by another
    }
  }

  // How the flat index of a buffer read from outside moves along each axis:
  // by an amount that depends on the move alone, with no padding that depends on it.
  void record_external(NodeId n, const Node& consumer, const std::vector<int>& dims, const Edge& e,
                       const std::vector<Expr>& x, const View::Index& vi) {
    ExternalRead read;
    read.offsets.assign(dims.size(), Expr(0));
    read.linear.assign(dims.size(), true);
    auto moves_alone = [&](const Expr& amount) {
      return std::none_of(x.begin(), x.end(), [&](const Expr& v) { return mentions(amount, v); });
    };
    for (size_t a = 0; a < dims.size(); ++a) {
      int at = input_position(consumer, dims[a]);
      if (at < 0 || !out_.independent[a]) continue;
      const Expr& var = x[static_cast<size_t>(at)];
      if (mentions(vi.valid, var)) {
        drop(a);
        continue;
      }
      using Map = std::unordered_map<Expr, Expr, ExprHash>;
      Expr at0 = simplify(substitute(vi.index, Map{{var, Expr(0)}}));
      Expr moved = simplify(substitute(vi.index, Map{{var, axis_origin(a, out_.extents[a])}}) - at0);
      if (!moves_alone(moved)) {
        drop(a);
        continue;
      }
      read.offsets[a] = moved;
      Expr step = simplify(substitute(vi.index, Map{{var, Expr(1)}}) - at0);
      read.linear[a] = moves_alone(step) && simplify(at0 + var * step) == vi.index;
    }
    for (size_t m = 0; m < members_.size(); ++m) {
      const std::vector<NodeId>& mine = out_.member_nodes[m];
      if (!std::binary_search(mine.begin(), mine.end(), n)) continue;
      auto [it, fresh] = out_.external[m].emplace(e.node, read);
      if (fresh) continue;
      // One kernel passes one pointer per buffer: every read of it must move alike.
      for (size_t a = 0; a < dims.size(); ++a) {
        if (simplify(it->second.offsets[a]) != simplify(read.offsets[a])) drop(a);
        it->second.linear[a] = it->second.linear[a] && read.linear[a];
      }
    }
  }

  const Graph& graph_;
  const std::vector<bool>& materialized_;
  const std::vector<NodeId>& members_;
  GroupAxes out_;
};

}  // namespace

Expr axis_origin(size_t a, const Expr& extent) {
  int64_t hi = extent.is_const() ? std::max<int64_t>(extent.value() - 1, 0) : kMaxDim;
  return Expr::var("origin" + std::to_string(a), 0, hi);
}

GroupAxes independent_axes(const Graph& graph, const std::vector<bool>& materialized,
                           const std::vector<NodeId>& members) {
  if (members.empty()) return GroupAxes{};
  return Analysis(graph, materialized, members).run();
}

}  // namespace lumen::kernel
