#include "lumen/egraph/extract.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <unordered_set>

#include "lumen/core/error.h"
#include "lumen/core/tensor.h"
#include "lumen/egraph/graph_hash.h"

namespace lumen::egraph {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kSymbolicDim = 256;       // a dynamic dim counts as this many elements
constexpr double kReductionCharge = 256;   // launching and materialising one reduction
constexpr double kViewCost = 1e-3;         // free, but positive so that no cycle is ever cheapest
constexpr double kImproveSeconds = 1.0;    // the most hill climbing on DAG cost may take

double elements(const Shape& shape) {
  double n = 1;
  for (const Expr& d : shape) n *= d.is_const() ? static_cast<double>(d.value()) : kSymbolicDim;
  return n;
}

double alu_cost(Op op) {
  switch (op) {
    case Op::Exp2:
    case Op::Log2:
    case Op::Sin: return 8;
    case Op::Sqrt:
    case Op::Recip: return 4;
    default: return 1;
  }
}

}  // namespace

double enode_cost(const EGraph& g, const ENode& n) {
  if (n.kind == ENodeKind::View) return kViewCost;
  if (n.op == Op::Input || n.op == Op::Constant) return 0;
  const Shape& operand = g.shape(n.children[0]);
  if (is_reduce(n.op)) {
    double out = elements(operand) / std::max(1.0, elements({operand[static_cast<size_t>(n.axis)]}));
    return elements(operand) + out * static_cast<double>(dtype_size(g.dtype(n.children[0].cls))) + kReductionCharge;
  }
  if (n.op == Op::Contiguous) return elements(operand) * static_cast<double>(dtype_size(g.dtype(n.children[0].cls)));
  if (n.op == Op::Gather) {
    double out = elements(operand) / std::max(1.0, elements({operand[static_cast<size_t>(n.axis)]})) *
                 elements(g.shape(n.children[1]));
    return out * (1 + static_cast<double>(dtype_size(g.dtype(n.children[0].cls))));
  }
  return elements(operand) * alu_cost(n.op);
}

Extractor::Extractor(const EGraph& egraph, const GraphRoots& roots, const Graph& original)
    : egraph_(egraph), roots_(roots), original_(original) {
  compute_best();
  improve(best_, kImproveSeconds);
}

void Extractor::compute_best() {
  size_t n = egraph_.class_capacity();
  best_cost_.assign(n, kInf);
  best_.assign(n, -1);
  std::vector<ClassId> ids = egraph_.class_ids();
  for (bool changed = true; changed;) {
    changed = false;
    for (ClassId c : ids) {
      const std::vector<ENode>& nodes = egraph_.eclass(c).nodes;
      for (size_t j = 0; j < nodes.size(); ++j) {
        double cost = enode_cost(egraph_, nodes[j]);
        for (const EChild& ch : nodes[j].children) cost += best_cost_[static_cast<size_t>(egraph_.find(ch.cls))];
        if (cost < best_cost_[static_cast<size_t>(c)] * (1 - 1e-12) || (best_[static_cast<size_t>(c)] < 0 && cost < kInf)) {
          best_cost_[static_cast<size_t>(c)] = cost;
          best_[static_cast<size_t>(c)] = static_cast<int>(j);
          changed = true;
        }
      }
    }
  }
}

void Extractor::improve(Choice& choice, double seconds) const {
  auto start = std::chrono::steady_clock::now();
  double cost = dag_cost(choice);
  for (int round = 0; round < 3; ++round) {
    bool better = false;
    for (ClassId c : reachable(choice)) {
      const std::vector<ENode>& nodes = egraph_.eclass(c).nodes;
      int kept = choice[static_cast<size_t>(c)];
      for (size_t j = 0; j < nodes.size(); ++j) {
        if (static_cast<int>(j) == kept) continue;
        bool ready = true;  // every operand class must already have a choice
        for (const EChild& ch : nodes[j].children) ready = ready && choice[static_cast<size_t>(egraph_.find(ch.cls))] >= 0;
        if (!ready) continue;
        choice[static_cast<size_t>(c)] = static_cast<int>(j);
        double trial = acyclic(choice) ? dag_cost(choice) : kInf;
        if (trial < cost * (1 - 1e-9)) {
          cost = trial;
          kept = static_cast<int>(j);
          better = true;
        }
        choice[static_cast<size_t>(c)] = kept;
      }
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds) return;
    }
    if (!better) return;
  }
}

bool Extractor::acyclic(const Choice& choice) const {
  std::vector<uint8_t> state(egraph_.class_capacity(), 0);  // 1: on the path, 2: done
  std::vector<std::pair<ClassId, size_t>> stack;
  auto roots = [&] {
    std::vector<ClassId> r;
    for (const EChild& o : roots_.outputs) r.push_back(egraph_.find(o.cls));
    for (const auto& u : roots_.updates) r.push_back(egraph_.find(u.value.cls));
    return r;
  }();
  for (ClassId root : roots) {
    if (state[static_cast<size_t>(root)]) continue;
    state[static_cast<size_t>(root)] = 1;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [c, next] = stack.back();
      const ENode& n = egraph_.eclass(c).nodes[static_cast<size_t>(choice[static_cast<size_t>(c)])];
      if (next == n.children.size()) {
        state[static_cast<size_t>(c)] = 2;
        stack.pop_back();
        continue;
      }
      ClassId child = egraph_.find(n.children[next++].cls);
      if (state[static_cast<size_t>(child)] == 1) return false;
      if (state[static_cast<size_t>(child)] == 0) {
        if (choice[static_cast<size_t>(child)] < 0) return false;
        state[static_cast<size_t>(child)] = 1;
        stack.emplace_back(child, 0);
      }
    }
  }
  return true;
}

Choice Extractor::original_choice() const {
  Choice choice(egraph_.class_capacity(), -1);
  for (size_t i = 0; i < roots_.node_class.size(); ++i) {
    ClassId c = egraph_.find(roots_.node_class[i]);
    if (choice[static_cast<size_t>(c)] >= 0) continue;  // merged with an earlier node: keep the earliest (acyclic)
    ENode canon = egraph_.canonical(roots_.node_enode[i]);
    const std::vector<ENode>& nodes = egraph_.eclass(c).nodes;
    auto it = std::find(nodes.begin(), nodes.end(), canon);
    if (it == nodes.end()) fail("egraph: original node ", i, " is missing from its class (rebuild() was not run)");
    choice[static_cast<size_t>(c)] = static_cast<int>(it - nodes.begin());
  }
  return choice;
}

std::vector<ClassId> Extractor::reachable(const Choice& choice) const {
  std::vector<ClassId> order, stack;
  std::vector<uint8_t> seen(egraph_.class_capacity(), 0);
  auto push = [&](ClassId c) {
    c = egraph_.find(c);
    if (!seen[static_cast<size_t>(c)]) {
      seen[static_cast<size_t>(c)] = 1;
      stack.push_back(c);
    }
  };
  for (const EChild& o : roots_.outputs) push(o.cls);
  for (const auto& u : roots_.updates) push(u.value.cls);
  while (!stack.empty()) {
    ClassId c = stack.back();
    stack.pop_back();
    order.push_back(c);
    int j = choice[static_cast<size_t>(c)];
    if (j < 0) fail("egraph: extraction chose no e-node for class ", c);
    for (const EChild& ch : egraph_.eclass(c).nodes[static_cast<size_t>(j)].children) push(ch.cls);
  }
  return order;
}

double Extractor::dag_cost(const Choice& choice) const {
  double total = 0;
  for (ClassId c : reachable(choice)) {
    total += enode_cost(egraph_, egraph_.eclass(c).nodes[static_cast<size_t>(choice[static_cast<size_t>(c)])]);
  }
  return total;
}

namespace {

// Emits chosen e-nodes into a Graph, each class once; a class is an Edge
// (a node read through a view) because View e-nodes become views.
class Emitter {
 public:
  Emitter(const EGraph& g, const Choice& choice, Graph& out) : g_(g), choice_(choice), out_(out) {
    edges_.resize(g.class_capacity());
    state_.assign(g.class_capacity(), 0);
  }
  std::vector<NodeId> input_node;  // original Graph node id -> new node id

  Edge operand(const EChild& ch) {
    Edge e = emit(ch.cls);
    return Edge{e.node, e.view.then(g_.views().get(ch.view))};
  }

  Edge emit(ClassId c) {
    c = g_.find(c);
    auto idx = static_cast<size_t>(c);
    if (state_[idx] == 2) return edges_[idx];
    if (state_[idx] == 1) fail("egraph: the extraction choice is cyclic at class ", c);
    state_[idx] = 1;
    int j = choice_[idx];
    if (j < 0) fail("egraph: extraction chose no e-node for class ", c);
    const ENode& n = g_.eclass(c).nodes[static_cast<size_t>(j)];
    Edge result;
    if (n.kind == ENodeKind::View) {
      result = operand(n.children[0]);
    } else if (n.op == Op::Input) {
      result = Edge{input_node[static_cast<size_t>(n.leaf)], View::contiguous(g_.shape(c))};
    } else {
      Node node;
      node.op = n.op;
      node.dtype = g_.dtype(c);
      node.shape = g_.shape(c);
      node.axis = n.axis;
      node.number = n.number;
      node.pattern = n.pattern;
      for (const EChild& ch : n.children) node.inputs.push_back(operand(ch));
      result = Edge{out_.add(std::move(node)), View::contiguous(g_.shape(c))};
    }
    edges_[idx] = result;
    state_[idx] = 2;
    return result;
  }

 private:
  const EGraph& g_;
  const Choice& choice_;
  Graph& out_;
  std::vector<Edge> edges_;
  std::vector<uint8_t> state_;
};

}  // namespace

Graph Extractor::build(const Choice& choice) const {
  Graph out;
  for (const std::string& name : original_.dim_names()) out.dim(name);
  Emitter emitter(egraph_, choice, out);
  emitter.input_node.assign(original_.size(), -1);
  for (NodeId id : original_.input_ids()) emitter.input_node[static_cast<size_t>(id)] = out.add(original_.node(id));
  for (const DimConstraint& c : original_.constraints()) out.require(c.condition, c.message);
  // Classes in the original graph's order, each after what its chosen e-node
  // reads: kernels run in node order, and the order the graph was written in
  // keeps lifetimes short (a training step's backward makes each weight's
  // gradient right after the activation gradient it reads). The depth-first
  // order of the roots alone would put every weight gradient after the whole
  // backward pass (each is first reached from its own state update) and keep
  // the activation gradients alive until then.
  std::vector<uint8_t> used(egraph_.class_capacity(), 0);
  for (ClassId c : reachable(choice)) used[static_cast<size_t>(c)] = 1;
  for (size_t i = 0; i < original_.size(); ++i) {
    ClassId c = egraph_.find(roots_.node_class[i]);
    if (original_.nodes()[i].op != Op::Input && used[static_cast<size_t>(c)]) emitter.emit(c);
  }
  for (size_t i = 0; i < roots_.outputs.size(); ++i) {
    Edge e = emitter.operand(roots_.outputs[i]);
    out.mark_output(Tensor(&out, e.node, e.view), roots_.output_names[i]);
  }
  for (size_t i = 0; i < roots_.updates.size(); ++i) {
    const StateUpdate& u = original_.updates()[i];
    Edge value = emitter.operand(roots_.updates[i].value);
    out.assign(Tensor(&out, emitter.input_node[static_cast<size_t>(u.state)], u.view), Tensor(&out, value.node, value.view));
  }
  return out;
}

std::vector<Candidate> Extractor::candidates(size_t count, bool operand_order_matters) const {
  struct Option {
    double delta;
    ClassId cls;
    int node;
  };
  std::vector<Option> options;
  for (ClassId c : reachable(best_)) {
    const std::vector<ENode>& nodes = egraph_.eclass(c).nodes;
    for (size_t j = 0; j < nodes.size(); ++j) {
      if (static_cast<int>(j) == best_[static_cast<size_t>(c)]) continue;
      double cost = enode_cost(egraph_, nodes[j]);
      for (const EChild& ch : nodes[j].children) cost += best_cost_[static_cast<size_t>(egraph_.find(ch.cls))];
      if (cost < kInf) options.push_back({cost - best_cost_[static_cast<size_t>(c)], c, static_cast<int>(j)});
    }
  }
  std::stable_sort(options.begin(), options.end(), [](const Option& a, const Option& b) { return a.delta < b.delta; });
  std::vector<Candidate> found;
  std::unordered_set<uint64_t> hashes;
  auto consider = [&](const Choice& choice, const std::string& label) {
    try {
      Graph g = build(choice);
      std::vector<Edge> outputs;
      for (const NamedOutput& o : g.outputs()) outputs.push_back(o.edge);
      uint64_t h = graph_hash(g, outputs);
      if (!hashes.insert(operand_order_matters ? h : graph_hash_unordered(g, outputs)).second) return;
      found.push_back({std::move(g), std::move(outputs), dag_cost(choice), h, false, label});
    } catch (const Error&) {
      // a cyclic switch: not a program
    }
  };
  consider(best_, "best");
  size_t tries = 0;
  for (const Option& o : options) {
    if (found.size() >= count * 2 || ++tries > count * 16) break;
    Choice choice = best_;
    choice[static_cast<size_t>(o.cls)] = o.node;
    consider(choice, "class " + std::to_string(o.cls) + " takes e-node " + std::to_string(o.node));
  }
  // The original graph itself: after merges one class may stand for two of
  // its nodes (x and x + 0), which no single choice per class reproduces.
  uint64_t original_hash = graph_hash(original_, roots_.output_edges);
  uint64_t original_key = operand_order_matters ? original_hash : graph_hash_unordered(original_, roots_.output_edges);
  if (!hashes.insert(original_key).second) {  // the same program as one found: that one becomes the original
    for (Candidate& c : found) {
      uint64_t key = operand_order_matters ? c.hash : graph_hash_unordered(c.graph, c.outputs);
      if (key == original_key) {
        c = Candidate{original_, roots_.output_edges, c.cost, original_hash, true, "original"};
      }
    }
  } else {
    found.push_back({original_, roots_.output_edges, dag_cost(original_choice()), original_hash, true, "original"});
  }
  std::stable_sort(found.begin(), found.end(), [](const Candidate& a, const Candidate& b) { return a.cost < b.cost; });
  std::vector<Candidate> out;
  for (Candidate& c : found) {
    if (out.size() < count || (c.original && std::none_of(out.begin(), out.end(), [](const Candidate& k) { return k.original; }))) {
      if (out.size() >= count && !c.original) continue;
      out.push_back(std::move(c));
    }
  }
  return out;
}

Graph round_trip(const Graph& graph) {
  EGraph egraph;
  GraphRoots roots = egraph.add_graph(graph);
  egraph.rebuild();
  Extractor extractor(egraph, roots, graph);
  return extractor.build(extractor.original_choice());
}

}  // namespace lumen::egraph
