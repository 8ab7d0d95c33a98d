// EGraph — equivalence classes of e-nodes (ENode) with hash-consing,
// union-find and congruence closure. Every class holds values of one shape
// and dtype; merging classes of different shapes is a bug and raises.
//
// Usage: from_graph() adds a Graph (one class per node), rules add e-nodes
// and merge() classes, rebuild() restores the invariants (canonical children,
// congruent e-nodes in one class) before the next search.
#pragma once

#include <cstddef>
#include <optional>
#include <unordered_map>
#include <vector>

#include "lumen/core/graph.h"
#include "lumen/egraph/enode.h"

namespace lumen::egraph {

struct EClass {
  std::vector<ENode> nodes;
  Shape shape;
  DType dtype = DType::F32;
};

// Where a Graph's outputs and state updates live in the e-graph.
struct GraphRoots {
  std::vector<EChild> outputs;  // in Graph::outputs() order, or the edges add_graph was given
  std::vector<std::string> output_names;
  std::vector<Edge> output_edges;  // the Graph's edges they came from
  struct Update {
    ClassId state = -1;
    ViewId view = -1;
    EChild value;
  };
  std::vector<Update> updates;  // in Graph::updates() order
  std::vector<ClassId> node_class;  // the class of each Graph node
  std::vector<ENode> node_enode;    // the e-node each Graph node became (children as added)
};

class EGraph {
 public:
  // Adds every node of `graph`; Input leaves keep the Graph's node id, so
  // extraction can copy names, flags and dtypes from that graph.
  GraphRoots add_graph(const Graph& graph);
  // The same with these edges as the outputs (named out0, out1, ...).
  GraphRoots add_graph(const Graph& graph, const std::vector<Edge>& outputs);

  // Adds an e-node (children need not be canonical); returns its class. The
  // e-node must be well-formed (operand shapes, dtypes, axes); raises if not.
  ClassId add(ENode node);
  // The class of `child.cls` read through its view (a View e-node, or the
  // class itself when the view is the identity).
  ClassId add_view(EChild child);
  EChild edge(ClassId cls, const View& view) { return {find(cls), views_.intern(view)}; }
  EChild identity_edge(ClassId cls);

  ClassId find(ClassId id) const;
  // Unions two classes; returns false if they were already one.
  bool merge(ClassId a, ClassId b);
  // Restores congruence closure; returns the number of merges it made.
  size_t rebuild();

  const EClass& eclass(ClassId id) const { return classes_[static_cast<size_t>(find(id))]; }
  const Shape& shape(ClassId id) const { return eclass(id).shape; }
  DType dtype(ClassId id) const { return eclass(id).dtype; }
  // The shape an operand is seen at.
  const Shape& shape(const EChild& c) const { return views_.get(c.view).shape(); }
  std::vector<ClassId> class_ids() const;  // canonical classes
  size_t node_count() const { return memo_.size(); }
  size_t class_count() const;
  size_t class_capacity() const { return classes_.size(); }  // ids ever made (merged ones included)

  ViewTable& views() { return views_; }
  const ViewTable& views() const { return views_; }
  ENode canonical(ENode node) const;
  // The class holding `node` (canonicalised), if any.
  std::optional<ClassId> lookup(const ENode& node) const;
  // The value of every element if the class holds a number constant.
  std::optional<double> uniform_constant(ClassId id) const;

 private:
  void infer(const ENode& node, Shape& shape, DType& dtype) const;

  ViewTable views_;
  std::vector<EClass> classes_;
  mutable std::vector<ClassId> parent_;
  std::unordered_map<ENode, ClassId, ENodeHash> memo_;
  std::unordered_map<int, Shape> input_shapes_;  // Input leaves by Graph node id
};

}  // namespace lumen::egraph
