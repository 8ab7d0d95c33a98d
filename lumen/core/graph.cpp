#include "lumen/core/graph.h"

#include <algorithm>

#include "lumen/core/array.h"
#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/core/tensor.h"

namespace lumen {

namespace {

bool same_shape(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d) {
    if (simplify(a[d]) != simplify(b[d])) return false;
  }
  return true;
}

Shape without_axis(const Shape& shape, int axis) {
  Shape out = shape;
  out.erase(out.begin() + axis);
  return out;
}

// Structural checks every node must pass, whoever builds it (Tensor methods
// give friendlier errors first; graph passes rely on these).
void validate(const Node& n, const std::vector<Node>& nodes) {
  const char* op = op_name(n.op);
  std::vector<int64_t> dims;
  for (const Expr& d : n.shape) dims.push_back(d.is_const() ? d.value() : 1);
  checked_byte_size(dims, n.dtype, op);  // a shape too large to lay out fails here, not at run time
  for (const Edge& e : n.inputs) {
    if (e.node < 0 || static_cast<size_t>(e.node) >= nodes.size()) fail(op, ": input node ", e.node, " does not exist");
    if (!same_shape(e.view.base_shape(), nodes[static_cast<size_t>(e.node)].shape)) {
      fail(op, ": an input view starts from shape ", to_string(e.view.base_shape()), " but node ", e.node,
           " has shape ", to_string(nodes[static_cast<size_t>(e.node)].shape));
    }
  }
  auto operand = [&](size_t i) -> const Shape& { return n.inputs[i].view.shape(); };
  auto dtype_of = [&](size_t i) { return nodes[static_cast<size_t>(n.inputs[i].node)].dtype; };
  size_t want = n.op == Op::Input || n.op == Op::Constant                    ? 0
                : is_binary(n.op) || n.op == Op::Gather                      ? 2
                                                                             : 1;
  if (n.inputs.size() != want) fail(op, ": expects ", want, " inputs, got ", n.inputs.size());
  if (is_unary(n.op) || n.op == Op::Cast || n.op == Op::Contiguous) {
    if (!same_shape(operand(0), n.shape)) fail(op, ": output shape ", to_string(n.shape), " differs from its input's");
  }
  if (is_binary(n.op)) {
    if (!same_shape(operand(0), operand(1)) || !same_shape(operand(0), n.shape)) {
      fail(op, ": operand shapes ", to_string(operand(0)), " and ", to_string(operand(1)), " must equal the output's ",
           to_string(n.shape));
    }
    if (dtype_of(0) != dtype_of(1)) fail(op, ": operand dtypes differ: ", dtype_name(dtype_of(0)), " and ", dtype_name(dtype_of(1)));
  }
  if (is_reduce(n.op)) {
    if (n.axis < 0 || static_cast<size_t>(n.axis) >= operand(0).size()) fail(op, ": axis ", n.axis, " out of range");
    if (!same_shape(without_axis(operand(0), n.axis), n.shape)) fail(op, ": output shape ", to_string(n.shape), " is wrong");
  }
  if (n.op == Op::Input && n.name.empty()) fail("Input: needs a name");
  if ((is_unary(n.op) || is_binary(n.op) || is_reduce(n.op)) && !n.inputs.empty() && is_storage_only(dtype_of(0))) {
    fail(op, ": ", dtype_name(dtype_of(0)), " is a storage type (quantized weights, bytes); cast to i32 or f32 before arithmetic");
  }
  for (const Expr& d : n.shape) {
    if (!d.defined() || d.hi() < 0) fail(op, ": shape ", to_string(n.shape), " has an invalid dim");
  }
}

}  // namespace

Tensor Graph::input(const std::string& name, const Shape& shape, DType dtype) {
  if (name.empty()) fail("input: a name is required (inputs are set by name)");
  if (find_input(name) >= 0) fail("input: an input named '", name, "' already exists");
  for (const Expr& d : shape) {
    for (const Expr& v : expr_vars(d)) {
      if (!has_dim(v.name())) dim_names_.push_back(v.name());
    }
  }
  Node n;
  n.op = Op::Input;
  n.dtype = dtype;
  n.shape = shape;
  n.name = name;
  return tensor(add(std::move(n)));
}

Tensor Graph::state(const std::string& name, const Shape& shape, DType dtype) {
  for (const Expr& d : shape) {
    if (!d.is_const()) {
      fail("state: '", name, "' has shape ", to_string(shape),
           "; state shapes must be concrete (a capacity); read a dynamic prefix with slice()");
    }
  }
  Tensor t = input(name, shape, dtype);
  nodes_[static_cast<size_t>(t.node_id())].persistent = true;
  return t;
}

Tensor Graph::parameter(const std::string& name, const Shape& shape, DType dtype) {
  Tensor t = input(name, shape, dtype);
  nodes_[static_cast<size_t>(t.node_id())].parameter = true;
  return t;
}

void Graph::assign(const Tensor& target, const Tensor& value) {
  if (target.graph() != this || value.graph() != this) fail("assign: the tensors belong to a different graph");
  const Node& s = node(target.node_id());
  if (s.op != Op::Input || !s.persistent) {
    fail("assign: the target must be a view of a state tensor (Graph::state); it is a ", op_name(s.op), " node");
  }
  require(target.view().injective_condition(),
          "assign: the target view of state '" + s.name + "' (" + target.view().to_string() +
              ") may write one position twice (broadcast, padding or overlapping windows); use slices, permutes and reshapes");
  if (value.dtype() != s.dtype) {
    fail("assign: state '", s.name, "' is ", dtype_name(s.dtype), " but the value is ", dtype_name(value.dtype()));
  }
  if (target.rank() != value.rank()) {
    fail("assign: the target region of state '", s.name, "' has shape ", to_string(target.shape()),
         " but the value has shape ", to_string(value.shape()));
  }
  for (size_t d = 0; d < target.rank(); ++d) {
    require(eq(target.shape()[d], value.shape()[d]),
            "assign: the target region of state '" + s.name + "' has shape " + to_string(target.shape()) +
                " but the value has shape " + to_string(value.shape()));
  }
  updates_.push_back({target.node_id(), target.view(), value.edge()});
}

std::vector<NodeId> Graph::state_ids() const {
  std::vector<NodeId> ids;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].op == Op::Input && nodes_[i].persistent) ids.push_back(static_cast<NodeId>(i));
  }
  return ids;
}

Tensor Graph::constant(double value, DType dtype) {
  Node n;
  n.op = Op::Constant;
  n.dtype = dtype;
  n.number = value;
  return tensor(add(std::move(n)));
}

Tensor Graph::constant_int(int64_t value, DType dtype) {
  constexpr int64_t exact = int64_t{1} << 53;  // every integer up to here is a double
  if (is_float(dtype) || dtype == DType::Bool || (value >= -exact && value <= exact)) {
    return constant(static_cast<double>(value), dtype);
  }
  // hi * 2^32 + lo, both parts exact in double; int64 arithmetic reaches every value this way.
  // (Not an index Expr: those saturate at +-2^62.)
  int64_t hi = value >> 32, lo = value & 0xffffffffLL;
  return constant(static_cast<double>(hi), dtype)
      .mul(constant(4294967296.0, dtype))
      .add(constant(static_cast<double>(lo), dtype));
}

Tensor Graph::iota(const Expr& pattern, const Shape& shape, DType dtype) {
  if (!pattern.defined()) fail("iota: the pattern expression is undefined");
  if (pattern.lo() <= -kBoundInf || pattern.hi() >= kBoundInf) {
    if (pattern.is_const()) fail("iota: the value ", pattern.value(), " is beyond index expressions' +-2^62 (use constant_int)");
  }
  std::vector<Expr> allowed = loop_indices(shape);
  for (const Expr& v : expr_vars(pattern)) {
    bool is_index = std::find(allowed.begin(), allowed.end(), v) != allowed.end();
    bool is_dim = has_dim(v.name());
    if (!is_index && !is_dim) {
      fail("iota: pattern ", pattern, " uses '", v.name(), "', which is neither an element index of shape ",
           to_string(shape), " (use loop_index(shape, d)) nor a dynamic dim of the graph");
    }
  }
  Node n;
  n.op = Op::Constant;
  n.dtype = dtype;
  n.shape = shape;
  n.pattern = pattern;
  return tensor(add(std::move(n)));
}

Expr Graph::dim(const std::string& name) {
  if (!has_dim(name)) dim_names_.push_back(name);
  return Expr::symbol(name);
}

NodeId Graph::add(Node node) {
  validate(node, nodes_);
  if (node.op == Op::Input) input_ids_.push_back(static_cast<NodeId>(nodes_.size()));
  nodes_.push_back(std::move(node));
  return static_cast<NodeId>(nodes_.size() - 1);
}

const Node& Graph::node(NodeId id) const {
  if (id < 0 || static_cast<size_t>(id) >= nodes_.size()) fail("graph: node ", id, " does not exist");
  return nodes_[static_cast<size_t>(id)];
}

Tensor Graph::tensor(NodeId id) { return Tensor(this, id, View::contiguous(node(id).shape)); }

void Graph::mark_output(const Tensor& t, const std::string& name) {
  if (t.graph() != this) fail("mark_output: the tensor belongs to a different graph");
  std::string n = name.empty() ? "out" + std::to_string(outputs_.size()) : name;
  for (const NamedOutput& o : outputs_) {
    if (o.name == n) fail("mark_output: an output named '", n, "' already exists");
  }
  outputs_.push_back({n, t.edge()});
}

NodeId Graph::find_input(const std::string& name) const {
  for (NodeId id : input_ids_) {
    if (nodes_[static_cast<size_t>(id)].name == name) return id;
  }
  return -1;
}

void Graph::bind_inputs(const NodeArrays& inputs, const std::vector<bool>& needed, Bindings& bindings) const {
  if (inputs.size() != nodes_.size()) {
    fail("run: ", inputs.size(), " input slots for a graph of ", nodes_.size(), " nodes (internal error)");
  }
  std::vector<std::pair<NodeId, std::vector<int64_t>>> shapes;
  for (NodeId id : input_ids_) {
    const Node& n = nodes_[static_cast<size_t>(id)];
    const Array* a = inputs[static_cast<size_t>(id)];
    if (!a) {
      if (!needed[static_cast<size_t>(id)]) continue;
      fail("run: input '", n.name, "' (shape ", to_string(n.shape), ", ", dtype_name(n.dtype),
           ") was not set; set it before running");
    }
    if (a->dtype() != n.dtype) {
      fail("run: input '", n.name, "' is declared ", dtype_name(n.dtype), " but was set with ", dtype_name(a->dtype()),
           " data");
    }
    bool fixed = n.shape.size() == a->shape().size();  // constant dims equal to the data's need no binding
    for (size_t d = 0; fixed && d < n.shape.size(); ++d) {
      fixed = n.shape[d].is_const() && n.shape[d].value() == a->shape()[d];
    }
    if (!fixed) shapes.emplace_back(id, a->shape());
  }
  bind_dims(shapes, bindings);
}

std::vector<std::string> Graph::dim_names() const { return dim_names_; }

bool Graph::has_dim(const std::string& name) const {
  return std::find(dim_names_.begin(), dim_names_.end(), name) != dim_names_.end();
}

Bindings Graph::dims_bound(const std::map<std::string, int64_t>& named, int64_t otherwise) const {
  Bindings dims;
  for (const std::string& d : dim_names_) {
    auto it = named.find(d);
    dims[d] = it != named.end() ? it->second : otherwise;
  }
  return dims;
}

void Graph::require(const Expr& condition, const std::string& message) {
  Expr c = simplify(condition);
  if (prove(c)) return;
  if (prove(logical_not(c))) fail(message);
  constraints_.push_back({c, message});
}

void Graph::bind_dims(const std::vector<std::pair<std::string, std::vector<int64_t>>>& input_shapes,
                      Bindings& bindings) const {
  std::vector<std::pair<NodeId, std::vector<int64_t>>> by_id;
  for (const auto& [name, dims] : input_shapes) {
    NodeId id = find_input(name);
    if (id < 0) fail("bind: the graph has no input named '", name, "'");
    by_id.emplace_back(id, dims);
  }
  bind_dims(by_id, bindings);
}

void Graph::bind_dims(const std::vector<std::pair<NodeId, std::vector<int64_t>>>& input_shapes, Bindings& bindings) const {
  for (const auto& [id, dims] : input_shapes) {  // bare symbols bind directly
    const Node& n = node(id);
    const std::string& name = n.name;
    if (n.shape.size() != dims.size()) {
      fail("input '", name, "' expects rank ", n.shape.size(), " (shape ", to_string(n.shape), "), got shape ",
           shape_string(dims));
    }
    for (size_t d = 0; d < dims.size(); ++d) {
      const Expr& want = n.shape[d];
      if (want.kind() != ExprKind::Var) continue;
      auto it = bindings.find(want.name());
      if (it == bindings.end()) {
        bindings[want.name()] = dims[d];
      } else if (it->second != dims[d]) {
        fail("input '", name, "' has shape ", shape_string(dims), ", so dim '", want.name(), "' would be ", dims[d],
             ", but it is already ", it->second, " (from another input or an explicit binding)");
      }
    }
  }
  check_dims(bindings);
  for (const auto& [id, dims] : input_shapes) {  // then every dim must agree
    const Node& n = node(id);
    const std::string& name = n.name;
    for (size_t d = 0; d < dims.size(); ++d) {
      int64_t want = evaluate(n.shape[d], bindings);
      if (want != dims[d]) {
        fail("input '", name, "' expects shape ", to_string(n.shape), " = ", shape_string([&] {
               std::vector<int64_t> s;
               for (const Expr& e : n.shape) s.push_back(evaluate(e, bindings));
               return s;
             }()), ", got ", shape_string(dims));
      }
    }
  }
}

void Graph::check_dims(const Bindings& bindings) const {
  for (const std::string& name : dim_names_) {
    auto it = bindings.find(name);
    if (it == bindings.end()) {
      fail("dynamic dim '", name, "' is not bound: set an input whose shape uses it, or bind it explicitly");
    }
    if (it->second < 0) fail("dynamic dim '", name, "' is bound to ", it->second, "; dims must be >= 0");
    if (it->second > kMaxDim) fail("dynamic dim '", name, "' is bound to ", it->second, ", more than the limit ", kMaxDim);
  }
  for (const DimConstraint& c : constraints_) {
    if (evaluate(c.condition, bindings) == 0) fail(c.message);
  }
}

}  // namespace lumen
