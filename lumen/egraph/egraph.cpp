#include "lumen/egraph/egraph.h"

#include <algorithm>

#include "lumen/core/error.h"

namespace lumen::egraph {

namespace {

Shape without_axis(const Shape& shape, int axis) {
  Shape out = shape;
  out.erase(out.begin() + axis);
  return out;
}

}  // namespace

ClassId EGraph::find(ClassId id) const {
  if (id < 0 || static_cast<size_t>(id) >= parent_.size()) fail("egraph: class ", id, " does not exist");
  ClassId root = id;
  while (parent_[static_cast<size_t>(root)] != root) root = parent_[static_cast<size_t>(root)];
  while (parent_[static_cast<size_t>(id)] != root) {  // path compression
    ClassId next = parent_[static_cast<size_t>(id)];
    parent_[static_cast<size_t>(id)] = root;
    id = next;
  }
  return root;
}

ENode EGraph::canonical(ENode node) const {
  for (EChild& c : node.children) c.cls = find(c.cls);
  return node;
}

std::optional<ClassId> EGraph::lookup(const ENode& node) const {
  auto it = memo_.find(canonical(node));
  if (it == memo_.end()) return std::nullopt;
  return find(it->second);
}

void EGraph::infer(const ENode& n, Shape& shape, DType& dtype) const {
  const char* name = n.kind == ENodeKind::View ? "view" : op_name(n.op);
  auto operand = [&](size_t i) -> const Shape& { return views_.get(n.children[i].view).shape(); };
  auto operand_dtype = [&](size_t i) { return classes_[static_cast<size_t>(find(n.children[i].cls))].dtype; };
  for (const EChild& c : n.children) {
    if (!same_shape(views_.get(c.view).base_shape(), classes_[static_cast<size_t>(find(c.cls))].shape)) {
      fail("egraph: ", name, ": an operand view starts from shape ", to_string(views_.get(c.view).base_shape()),
           " but its class has shape ", to_string(classes_[static_cast<size_t>(find(c.cls))].shape));
    }
  }
  size_t want = n.kind == ENodeKind::View                        ? 1
                : n.op == Op::Input || n.op == Op::Constant     ? 0
                : is_binary(n.op) || n.op == Op::Gather          ? 2
                                                                 : 1;
  if (n.children.size() != want) fail("egraph: ", name, " expects ", want, " operands, got ", n.children.size());
  if (n.kind == ENodeKind::View) {
    shape = operand(0);
    dtype = operand_dtype(0);
    return;
  }
  switch (n.op) {
    case Op::Input: {
      auto it = input_shapes_.find(n.leaf);
      if (it == input_shapes_.end()) fail("egraph: input leaf ", n.leaf, " was not added by add_graph");
      shape = it->second;
      dtype = n.dtype;
      return;
    }
    case Op::Constant:
      shape = views_.get(n.leaf).shape();
      dtype = n.dtype;
      return;
    case Op::Gather: {
      const Shape& data = operand(0);
      if (n.axis < 0 || static_cast<size_t>(n.axis) >= data.size()) fail("egraph: Gather axis ", n.axis, " out of range");
      shape.assign(data.begin(), data.begin() + n.axis);
      shape.insert(shape.end(), operand(1).begin(), operand(1).end());
      shape.insert(shape.end(), data.begin() + n.axis + 1, data.end());
      dtype = operand_dtype(0);
      return;
    }
    default:
      break;
  }
  if (is_binary(n.op)) {
    if (!same_shape(operand(0), operand(1))) {
      fail("egraph: ", name, ": operand shapes ", to_string(operand(0)), " and ", to_string(operand(1)), " differ");
    }
    if (operand_dtype(0) != operand_dtype(1)) fail("egraph: ", name, ": operand dtypes differ");
    shape = operand(0);
    dtype = n.op == Op::LessThan ? DType::Bool : operand_dtype(0);
  } else if (is_reduce(n.op)) {
    if (n.axis < 0 || static_cast<size_t>(n.axis) >= operand(0).size()) {
      fail("egraph: ", name, ": axis ", n.axis, " out of range for shape ", to_string(operand(0)));
    }
    shape = without_axis(operand(0), n.axis);
    dtype = operand_dtype(0);
  } else {
    shape = operand(0);
    dtype = n.op == Op::Cast ? n.dtype : operand_dtype(0);
  }
}

ClassId EGraph::add(ENode node) {
  node = canonical(std::move(node));
  auto it = memo_.find(node);
  if (it != memo_.end()) return find(it->second);
  EClass cls;
  infer(node, cls.shape, cls.dtype);
  auto id = static_cast<ClassId>(classes_.size());
  cls.nodes.push_back(node);
  classes_.push_back(std::move(cls));
  parent_.push_back(id);
  memo_.emplace(std::move(node), id);
  return id;
}

EChild EGraph::identity_edge(ClassId cls) { return edge(cls, View::contiguous(shape(cls))); }

ClassId EGraph::add_view(EChild child) {
  if (views_.is_identity(child.view)) return find(child.cls);
  ENode n;
  n.kind = ENodeKind::View;
  n.children = {child};
  return add(std::move(n));
}

bool EGraph::merge(ClassId a, ClassId b) {
  a = find(a);
  b = find(b);
  if (a == b) return false;
  EClass& ca = classes_[static_cast<size_t>(a)];
  EClass& cb = classes_[static_cast<size_t>(b)];
  if (!same_shape(ca.shape, cb.shape) || ca.dtype != cb.dtype) {
    fail("egraph: merging classes of different shapes or dtypes: ", to_string(ca.shape), " ", dtype_name(ca.dtype),
         " and ", to_string(cb.shape), " ", dtype_name(cb.dtype), " (a rewrite rule is wrong)");
  }
  if (ca.nodes.size() < cb.nodes.size()) std::swap(a, b);  // keep the larger class as the root
  EClass& root = classes_[static_cast<size_t>(a)];
  EClass& gone = classes_[static_cast<size_t>(b)];
  root.nodes.insert(root.nodes.end(), gone.nodes.begin(), gone.nodes.end());
  gone.nodes.clear();
  gone.nodes.shrink_to_fit();
  parent_[static_cast<size_t>(b)] = a;
  return true;
}

size_t EGraph::rebuild() {
  size_t merges = 0;
  for (;;) {
    std::unordered_map<ENode, ClassId, ENodeHash> memo;
    memo.reserve(memo_.size());
    std::vector<std::pair<ClassId, ClassId>> pending;
    for (size_t c = 0; c < classes_.size(); ++c) {
      if (parent_[c] != static_cast<ClassId>(c)) continue;
      std::vector<ENode>& nodes = classes_[c].nodes;
      std::vector<ENode> kept;
      kept.reserve(nodes.size());
      for (ENode& n : nodes) {
        ENode canon = canonical(std::move(n));
        auto [it, inserted] = memo.emplace(canon, static_cast<ClassId>(c));
        if (inserted) {
          kept.push_back(std::move(canon));
        } else if (it->second != static_cast<ClassId>(c)) {
          pending.emplace_back(it->second, static_cast<ClassId>(c));  // congruent e-nodes in two classes
        }
      }
      nodes = std::move(kept);
    }
    memo_ = std::move(memo);
    size_t made = 0;
    for (auto [a, b] : pending) made += merge(a, b) ? 1 : 0;
    merges += made;
    if (made == 0) break;
  }
  for (auto& [node, cls] : memo_) cls = find(cls);
  return merges;
}

std::vector<ClassId> EGraph::class_ids() const {
  std::vector<ClassId> ids;
  for (size_t c = 0; c < classes_.size(); ++c) {
    if (parent_[c] == static_cast<ClassId>(c)) ids.push_back(static_cast<ClassId>(c));
  }
  return ids;
}

size_t EGraph::class_count() const { return class_ids().size(); }

std::optional<double> EGraph::uniform_constant(ClassId id) const {
  for (const ENode& n : eclass(id).nodes) {
    if (n.kind == ENodeKind::Prim && n.op == Op::Constant && !n.pattern.defined()) return n.number;
  }
  return std::nullopt;
}

GraphRoots EGraph::add_graph(const Graph& graph) {
  std::vector<Edge> edges;
  for (const NamedOutput& o : graph.outputs()) edges.push_back(o.edge);
  GraphRoots roots = add_graph(graph, edges);
  for (size_t i = 0; i < edges.size(); ++i) roots.output_names[i] = graph.outputs()[i].name;
  return roots;
}

GraphRoots EGraph::add_graph(const Graph& graph, const std::vector<Edge>& outputs) {
  GraphRoots roots;
  auto child = [&](const Edge& e) { return EChild{roots.node_class[static_cast<size_t>(e.node)], views_.intern(e.view)}; };
  for (size_t i = 0; i < graph.size(); ++i) {
    const Node& g = graph.nodes()[i];
    ENode n;
    n.op = g.op;
    n.dtype = g.dtype;
    if (g.op == Op::Input) {
      n.leaf = static_cast<int>(i);
      input_shapes_[n.leaf] = g.shape;
    } else if (g.op == Op::Constant) {
      n.number = g.number;
      n.pattern = g.pattern;
      n.leaf = views_.intern(View::contiguous(g.shape));
    } else {
      n.dtype = g.op == Op::Cast ? g.dtype : DType::F32;
      if (is_reduce(g.op) || g.op == Op::Gather) n.axis = g.axis;
      for (const Edge& e : g.inputs) n.children.push_back(child(e));
    }
    roots.node_enode.push_back(n);
    roots.node_class.push_back(add(std::move(n)));
  }
  for (const Edge& e : outputs) {
    if (e.node < 0 || static_cast<size_t>(e.node) >= graph.size()) fail("egraph: output node ", e.node, " does not exist");
    roots.outputs.push_back(child(e));
    roots.output_edges.push_back(e);
    roots.output_names.push_back("out" + std::to_string(roots.output_names.size()));
  }
  for (const StateUpdate& u : graph.updates()) {
    roots.updates.push_back({roots.node_class[static_cast<size_t>(u.state)], views_.intern(u.view), child(u.value)});
  }
  return roots;
}

}  // namespace lumen::egraph
