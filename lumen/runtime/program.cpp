#include "lumen/runtime/program.h"

#include <algorithm>
#include <cstring>

#include "lumen/core/error.h"

namespace lumen {

Program::Program(std::shared_ptr<const Graph> graph, std::vector<NamedOutput> outputs,
                 std::unique_ptr<Executor> executor)
    : graph_(std::move(graph)), outputs_(std::move(outputs)), executor_(std::move(executor)) {
  for (NodeId id : graph_->state_ids()) {
    const Node& n = graph_->node(id);
    std::vector<int64_t> shape;
    for (const Expr& d : n.shape) shape.push_back(d.value());
    Array& state = states_[n.name] = Array(n.dtype, shape);
    point_at(n.name, state);
  }
}

const Array& Program::state(const std::string& name) const {
  auto held = lock();
  auto it = states_.find(name);
  if (it == states_.end()) {
    std::string known;
    for (const auto& [n, a] : states_) known += (known.empty() ? "'" : ", '") + n + "'";
    fail("state: the program has no state named '", name, "' (states: ", known.empty() ? "none" : known, ")");
  }
  return it->second;
}

void Program::reset_state() {
  auto held = lock();
  for (auto& [name, a] : states_) std::memset(a.data(), 0, a.nbytes());
}

void Program::share_state(const Program& other) {
  auto held = lock();
  for (auto& [name, mine] : states_) {
    auto it = other.states_.find(name);
    if (it == other.states_.end()) fail("share_state: the other program has no state named '", name, "'");
    if (it->second.dtype() != mine.dtype() || it->second.shape() != mine.shape()) {
      fail("share_state: state '", name, "' is ", dtype_name(mine.dtype()), " ", shape_string(mine.shape()),
           " here but ", dtype_name(it->second.dtype()), " ", shape_string(it->second.shape()), " in the other program");
    }
  }
  for (auto& [name, mine] : states_) mine = other.states_.at(name);
}

void Program::share_state(const Program& other, const std::string& name) {
  auto held = lock();
  auto mine = states_.find(name);
  if (mine == states_.end()) fail("share_state: this program has no state named '", name, "'");
  const Array& theirs = other.state(name);
  if (theirs.dtype() != mine->second.dtype() || theirs.shape() != mine->second.shape()) {
    fail("share_state: state '", name, "' is ", dtype_name(mine->second.dtype()), " ", shape_string(mine->second.shape()),
         " here but ", dtype_name(theirs.dtype()), " ", shape_string(theirs.shape()), " in the other program");
  }
  mine->second = theirs;
}

std::vector<std::string> Program::state_names() const {
  auto held = lock();
  std::vector<std::string> names;
  for (const auto& [n, a] : states_) names.push_back(n);
  return names;
}

// The executor runs its own graph (passes may have rewritten this one): its
// node ids index by_node_.
void Program::point_at(const std::string& input, const Array& array) {
  const Graph& run_graph = executor_->graph();
  NodeId id = run_graph.find_input(input);
  if (id < 0) return;  // compiled away: nothing reads it
  by_node_.resize(run_graph.size(), nullptr);
  by_node_[static_cast<size_t>(id)] = &array;
}

const Node& Program::input_node(const std::string& input) const {
  NodeId id = graph_->find_input(input);
  if (id < 0) {
    std::string known;
    for (NodeId i : graph_->input_ids()) known += (known.empty() ? "'" : ", '") + graph_->node(i).name + "'";
    fail("set: the program has no input named '", input, "' (inputs: ", known.empty() ? "none" : known, ")");
  }
  return graph_->node(id);
}

void Program::set(const std::string& input, Array data) {
  auto held = lock();
  const Node& n = input_node(input);
  if (data.dtype() != n.dtype) {
    fail("set: input '", input, "' is declared ", dtype_name(n.dtype), " ", to_string(n.shape), " but the data is ",
         dtype_name(data.dtype()), " ", shape_string(data.shape()));
  }
  if (data.shape().size() != n.shape.size()) {
    fail("set: input '", input, "' expects shape ", to_string(n.shape), ", got ", shape_string(data.shape()));
  }
  for (size_t d = 0; d < n.shape.size(); ++d) {
    if (n.shape[d].is_const() && n.shape[d].value() != data.shape()[d]) {
      fail("set: input '", input, "' expects shape ", to_string(n.shape), ", got ", shape_string(data.shape()));
    }
  }
  if (n.persistent) {  // the program keeps its own buffer; runs update it in place
    Array& s = states_.at(input);
    std::memcpy(s.data(), data.data(), s.nbytes());
    return;
  }
  executor_->invalidate(input);
  point_at(input, inputs_[input] = std::move(data));
}

std::vector<int64_t> Program::declared_shape(const std::string& input) const {
  const Node& n = input_node(input);
  std::vector<int64_t> dims;
  for (const Expr& d : n.shape) {
    try {
      dims.push_back(evaluate(d, bindings_));
    } catch (const Error&) {
      fail("set: input '", input, "' has dynamic shape ", to_string(n.shape),
           "; pass an Array with a concrete shape or bind its dims first");
    }
  }
  return dims;
}

void Program::set(const std::string& input, const std::vector<float>& values) {
  auto held = lock();
  std::vector<int64_t> shape = declared_shape(input);
  Array a(input_node(input).dtype, shape);
  if (static_cast<int64_t>(values.size()) != a.numel()) {
    fail("set: input '", input, "' has shape ", shape_string(shape), " (", a.numel(), " elements), got ", values.size(),
         " values");
  }
  for (size_t i = 0; i < values.size(); ++i) a.set(static_cast<int64_t>(i), values[i]);
  set(input, std::move(a));
}

void Program::set(const std::string& input, const std::vector<int32_t>& values) {
  auto held = lock();
  std::vector<int64_t> shape = declared_shape(input);
  Array a(input_node(input).dtype, shape);
  if (static_cast<int64_t>(values.size()) != a.numel()) {
    fail("set: input '", input, "' has shape ", shape_string(shape), " (", a.numel(), " elements), got ", values.size(),
         " values");
  }
  for (size_t i = 0; i < values.size(); ++i) a.set(static_cast<int64_t>(i), values[i]);
  set(input, std::move(a));
}

void Program::bind(const std::string& dim, int64_t value) {
  auto held = lock();
  if (!graph_->has_dim(dim)) fail("bind: the program has no dynamic dim '", dim, "'");
  if (value < 0) fail("bind: dynamic dim '", dim, "' = ", value, " is negative; dims must be >= 0");
  bindings_[dim] = value;
}

bool Program::has_dim(const std::string& dim) const { return graph_->has_dim(dim); }

void Program::run() {
  auto held = lock();
  results_.clear();  // lets the executor reuse output buffers nobody else holds
  by_node_.resize(executor_->graph().size(), nullptr);  // the graph may have grown (nodes are only appended)
  results_ = executor_->execute_by_node(by_node_, bindings_);
}

const Array& Program::get(const std::string& output) const {
  auto held = lock();
  for (size_t k = 0; k < outputs_.size(); ++k) {
    if (outputs_[k].name != output) continue;
    if (k >= results_.size()) fail("get: output '", output, "' is not available; call run() first");
    return results_[k];
  }
  fail("get: the program has no output named '", output, "'");
}

const Array& Program::get(const Tensor& output) const {
  for (const NamedOutput& o : outputs_) {
    if (o.edge == output.edge()) return get(o.name);
  }
  fail("get: that tensor is not an output of the program; pass it to compile() or mark_output() it");
}

std::vector<std::string> Program::output_names() const {
  std::vector<std::string> names;
  for (const NamedOutput& o : outputs_) names.push_back(o.name);
  return names;
}

}  // namespace lumen
