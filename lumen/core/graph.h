// Graph — a static program of primitive ops. Nodes are appended in
// topological order (a node's inputs always have smaller ids) and never
// change. Each input edge carries the View through which the consumer reads
// the producer's output, so movement costs nothing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lumen/core/dtype.h"
#include "lumen/core/error.h"
#include "lumen/core/expr.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/op.h"
#include "lumen/core/view.h"

namespace lumen {

class Array;
// A run's arrays by graph node id: graph.size() entries, the set inputs and
// states pointing at their arrays, null elsewhere.
using NodeArrays = std::vector<const Array*>;

class Tensor;
using NodeId = int32_t;

// How a consumer reads a producer: the view maps the producer's contiguous
// output (shape = producer's shape) to the operand's logical shape.
struct Edge {
  NodeId node = -1;
  View view;
  bool operator==(const Edge& other) const { return node == other.node && view == other.view; }
};

struct Node {
  Op op = Op::Constant;
  DType dtype = DType::F32;
  Shape shape;               // the output's shape; outputs are contiguous
  std::vector<Edge> inputs;  // operands, already in their logical shapes
  std::string name;          // Input: the name users set it by
  bool persistent = false;   // Input: a state buffer the Program keeps between runs
  bool parameter = false;    // Input: weights, unchanged between runs unless set() again
  double number = 0;         // Constant: the value, when `pattern` is undefined
  Expr pattern;              // Constant: an integer Expr of i0, i1, ... (per-dim element index)
  int axis = -1;             // SumReduce / MaxReduce / Gather
};

struct NamedOutput {
  std::string name;
  Edge edge;
};

// A write into persistent state: after a run, the region of `state` seen
// through `view` holds `value`. Every read in a run sees the state as it was
// before the run; updates land at its end, in the order they were recorded.
struct StateUpdate {
  NodeId state = -1;
  View view;  // from the state's shape to the written region's (value's) shape
  Edge value;
};

// A condition on dynamic dims that must hold when they are bound.
struct DimConstraint {
  Expr condition;
  std::string message;
};

class Graph {
 public:
  // Sources.
  Tensor input(const std::string& name, const Shape& shape, DType dtype = DType::F32);
  Tensor constant(double value, DType dtype = DType::F32);  // rank 0; expand/reshape to broadcast
  // An exact integer constant (an I64 value past 2^53 has no double: it is
  // built as hi * 2^32 + lo in i64); floats and bool convert as a Cast would.
  Tensor constant_int(int64_t value, DType dtype = DType::I64);
  Tensor iota(const Expr& pattern, const Shape& shape, DType dtype = DType::I32);
  // A dynamic dim: a symbol bound at run time (from input shapes or explicitly).
  Expr dim(const std::string& name);
  // Persistent state (e.g. a KV cache): an input the Program owns, zeroed when
  // compiled, kept between runs and changed only by assign(). Its shape is
  // concrete (a capacity); read a dynamic prefix of it with slice().
  Tensor state(const std::string& name, const Shape& shape, DType dtype = DType::F32);
  // A parameter (weights): an input whose values change only when it is set
  // again, so compiled programs may keep data derived from it (packed panels)
  // between runs. Modifying a parameter's memory in place without set() is
  // not seen.
  Tensor parameter(const std::string& name, const Shape& shape, DType dtype = DType::F32);
  // Records that, at the end of each run, the region `target` (a view of a
  // state tensor: slices, permutes, reshapes; no broadcast or padding) takes
  // `value` (same shape and dtype).
  void assign(const Tensor& target, const Tensor& value);
  const std::vector<StateUpdate>& updates() const { return updates_; }
  std::vector<NodeId> state_ids() const;

  // Appends a validated node; returns its id. Prefer the Tensor methods.
  NodeId add(Node node);
  const Node& node(NodeId id) const;
  size_t size() const { return nodes_.size(); }
  const std::vector<Node>& nodes() const { return nodes_; }
  Tensor tensor(NodeId id);  // the node's output as a Tensor

  void mark_output(const Tensor& t, const std::string& name = "");
  const std::vector<NamedOutput>& outputs() const { return outputs_; }
  const std::vector<NodeId>& input_ids() const { return input_ids_; }
  NodeId find_input(const std::string& name) const;  // -1 if absent
  std::vector<std::string> dim_names() const;         // dynamic dims, in first-use order
  bool has_dim(const std::string& name) const;        // whether `name` is one of them
  // A binding of every dynamic dim: `named` where it names it, else `otherwise`
  // (the sizes programs are tuned and timed at).
  Bindings dims_bound(const std::map<std::string, int64_t>& named, int64_t otherwise) const;

  // Records a condition on dynamic dims: fails now if provably false, is
  // dropped if provably true, else checked by check_dims() at run time.
  void require(const Expr& condition, const std::string& message);
  const std::vector<DimConstraint>& constraints() const { return constraints_; }

  // Completes `bindings` from the shapes of the given inputs and checks
  // every dim is bound, non-negative and satisfies the constraints.
  void bind_dims(const std::vector<std::pair<std::string, std::vector<int64_t>>>& input_shapes,
                 Bindings& bindings) const;
  // The same by input node id (no name look-ups: a run binds every input).
  void bind_dims(const std::vector<std::pair<NodeId, std::vector<int64_t>>>& input_shapes, Bindings& bindings) const;
  // Checks run-time inputs (every needed input set, dtypes, no unknown names)
  // and completes `bindings` from their shapes. `needed` marks nodes in use.
  template <typename ArrayMap>
  void bind_inputs(const ArrayMap& inputs, const std::vector<bool>& needed, Bindings& bindings) const {
    bind_inputs(arrays_by_node(inputs), needed, bindings);
  }
  void bind_inputs(const NodeArrays& inputs, const std::vector<bool>& needed, Bindings& bindings) const;
  // Arrays by input name as NodeArrays (pointing into `inputs`); a name that
  // is no input of the graph is an error.
  template <typename ArrayMap>
  NodeArrays arrays_by_node(const ArrayMap& inputs) const;
  void check_dims(const Bindings& bindings) const;

  // Graphviz. display() writes DOT and, when `dot` is installed, renders by
  // the file's extension (.svg, .png, .pdf); returns the written path.
  std::string to_dot() const;
  std::string display(const std::string& path) const;

 private:
  std::vector<Node> nodes_;
  std::vector<NodeId> input_ids_;  // the Input nodes, in order
  std::vector<NamedOutput> outputs_;
  std::vector<DimConstraint> constraints_;
  std::vector<std::string> dim_names_;
  std::vector<StateUpdate> updates_;
};

// Writes Graphviz text to `path` and, by its extension (.svg, .png, .pdf),
// renders it with `dot` when installed; returns the file written.
std::string write_dot(const std::string& dot, const std::string& path);
// Escapes a string for a quoted DOT label.
std::string dot_escape(const std::string& s);

template <typename ArrayMap>
NodeArrays Graph::arrays_by_node(const ArrayMap& inputs) const {
  NodeArrays by_node(nodes_.size(), nullptr);
  size_t found = 0;
  for (NodeId id : input_ids_) {
    auto it = inputs.find(nodes_[static_cast<size_t>(id)].name);
    if (it == inputs.end()) continue;
    by_node[static_cast<size_t>(id)] = &it->second;
    ++found;
  }
  if (found != inputs.size()) {  // input names are unique: some given name is no input
    for (const auto& entry : inputs) {
      if (find_input(entry.first) < 0) fail("run: the graph has no input named '", entry.first, "'");
    }
  }
  return by_node;
}

}  // namespace lumen
