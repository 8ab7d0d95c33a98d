#include "lumen/runtime/candidate_rig.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "lumen/backend/interp/interpreter.h"
#include "lumen/core/error.h"
#include "lumen/runtime/compiled_executor.h"

namespace lumen {

namespace {

// Above this many element steps the interpreter would take minutes: the
// original compiled program (checked first) is the reference instead.
constexpr double kMaxInterpreterSteps = 3e7;

// Float results may differ by reassociation; anything else must be equal.
void check_close(const Array& want, const Array& got, const std::string& what) {
  if (want.shape() != got.shape()) {
    fail("graph search: ", what, " has shape ", shape_string(got.shape()), ", the reference ", shape_string(want.shape()));
  }
  bool loose = want.dtype() == DType::F16 || want.dtype() == DType::BF16;
  double rtol = loose ? 5e-2 : 2e-3, atol = loose ? 5e-2 : 1e-3;
  for (int64_t i = 0; i < want.numel(); ++i) {
    if (!is_float(want.dtype())) {  // exact, int64 included
      if (want.load(i).i != got.load(i).i) fail("graph search: ", what, " element ", i, " is ", got.load(i).i, ", the reference ", want.load(i).i);
      continue;
    }
    double a = want.get(i), b = got.get(i);
    if (a == b || (std::isnan(a) && std::isnan(b))) continue;
    if (!is_float(want.dtype()) || !(std::abs(a - b) <= atol + rtol * std::abs(a))) {
      fail("graph search: ", what, " element ", i, " is ", b, ", the reference ", a);
    }
  }
}

// The inputs for one run: state buffers copied (runs write them), the rest shared.
std::map<std::string, Array> run_inputs(const Graph& graph, const std::map<std::string, Array>& arrays) {
  std::map<std::string, Array> out = arrays;
  for (NodeId id : graph.state_ids()) {
    auto it = out.find(graph.node(id).name);
    if (it != out.end()) it->second = it->second.clone();
  }
  return out;
}

}  // namespace

CandidateRig::CandidateRig(std::shared_ptr<const Graph> graph, std::vector<Edge> outputs,
                           const std::map<std::string, int64_t>& dims, int64_t default_dim)
    : graph_(std::move(graph)), outputs_(std::move(outputs)), bindings_(graph_->dims_bound(dims, default_dim)) {}

void CandidateRig::prepare() {
  if (prepared_) return;
  std::mt19937 rng(1234);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (NodeId id : graph_->input_ids()) {
    const Node& n = graph_->node(id);
    std::vector<int64_t> shape;
    for (const Expr& d : n.shape) shape.push_back(evaluate(d, bindings_));
    Array a(n.dtype, shape);
    for (int64_t i = 0; i < a.numel(); ++i) {
      if (is_float(n.dtype)) a.set(i, uniform(rng));
      else if (n.dtype == DType::Bool) a.set(i, static_cast<double>(rng() % 2));
      else a.set(i, static_cast<double>(rng() % 4));  // small: valid as gather indices
    }
    inputs_.emplace(n.name, std::move(a));
  }
  graph_->check_dims(bindings_);
  double steps = 0;
  for (const Node& n : graph_->nodes()) {
    double elements = 1;
    for (const Expr& d : n.shape) elements *= static_cast<double>(evaluate(d, bindings_));
    if (is_reduce(n.op)) elements *= static_cast<double>(evaluate(n.inputs[0].view.shape()[static_cast<size_t>(n.axis)], bindings_));
    steps += elements;
  }
  if (steps <= kMaxInterpreterSteps) {
    reference_ = interp::Interpreter(*graph_).run(inputs_, outputs_, bindings_);
    interpreted_ = true;
  }
  prepared_ = true;
}

void CandidateRig::check(const backend::CompiledProgram& program) {
  prepare();
  CompiledExecutor executor(program);
  std::map<std::string, Array> inputs = run_inputs(*graph_, inputs_);
  std::vector<Array> got = executor.execute(inputs, bindings_);
  bool first = !checked_any_;
  checked_any_ = true;
  if (reference_.empty()) {  // too large for the interpreter: the first program checked (the original) is the reference
    if (first) {
      for (const Array& a : got) reference_.push_back(a.clone());
    }
  }
  if (got.size() != reference_.size()) fail("graph search: a candidate has ", got.size(), " outputs, the graph ", reference_.size());
  for (size_t k = 0; k < got.size(); ++k) check_close(reference_[k], got[k], "output " + std::to_string(k));
  for (NodeId id : graph_->state_ids()) {
    const std::string& name = graph_->node(id).name;
    if (first) reference_states_[name] = inputs.at(name).clone();
    else check_close(reference_states_.at(name), inputs.at(name), "state '" + name + "'");
  }
}

namespace {

void check_rms(const Array& want, const Array& got, double relative_rms, const std::string& what) {
  if (want.numel() != got.numel()) fail("graph search: ", what, " has ", got.numel(), " elements, the reference ", want.numel());
  double err = 0, norm = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double a = want.get(i), b = got.get(i);
    err += (a - b) * (a - b);
    norm += a * a;
  }
  if (!(err <= relative_rms * relative_rms * norm)) {
    fail("graph search: ", what, " differs from the reference by a relative RMS of ", std::sqrt(err / std::max(norm, 1e-300)),
         " (allowed ", relative_rms, ")");
  }
}

}  // namespace

void CandidateRig::check_approximately(const backend::CompiledProgram& program, double relative_rms) {
  prepare();
  if (!checked_any_) fail("graph search: an approximate candidate was checked before the original (internal error)");
  CompiledExecutor executor(program);
  std::map<std::string, Array> inputs = run_inputs(*graph_, inputs_);
  std::vector<Array> got = executor.execute(inputs, bindings_);
  if (got.size() != reference_.size()) fail("graph search: a candidate has ", got.size(), " outputs, the graph ", reference_.size());
  for (size_t k = 0; k < got.size(); ++k) check_rms(reference_[k], got[k], relative_rms, "output " + std::to_string(k));
  for (NodeId id : graph_->state_ids()) {
    const std::string& name = graph_->node(id).name;
    if (is_float(graph_->node(id).dtype)) check_rms(reference_states_.at(name), inputs.at(name), relative_rms, "state '" + name + "'");
  }
  // Where the interpreter ran the original, it runs the candidate's own graph too: the program must
  // compute what that graph says (its rounding included) within the exact check's tolerance.
  if (interpreted_ && program.graph) {
    std::vector<Array> own = interp::Interpreter(*program.graph).run(inputs_, program.outputs, bindings_);
    for (size_t k = 0; k < got.size() && k < own.size(); ++k) {
      check_close(own[k], got[k], "output " + std::to_string(k) + " (against the interpreter on the candidate's graph)");
    }
  }
}

}  // namespace lumen
