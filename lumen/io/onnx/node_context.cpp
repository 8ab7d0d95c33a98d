#include "lumen/io/onnx/node_context.h"

#include "lumen/core/error.h"
#include "onnx/onnx.pb.h"

namespace lumen::onnx {

using ::onnx::AttributeProto;

NodeContext::NodeContext(Importer& importer, const ::onnx::NodeProto& node) : importer_(importer), node_(node) {}

const std::string& NodeContext::op_type() const { return node_.op_type(); }

std::string NodeContext::where() const {
  return "node '" + escape_bytes(node_.name()) + "' (" + escape_bytes(node_.op_type()) + ")";
}

size_t NodeContext::num_inputs() const { return static_cast<size_t>(node_.input_size()); }

size_t NodeContext::num_outputs() const { return static_cast<size_t>(node_.output_size()); }

bool NodeContext::output_used(size_t k) const {
  return k < num_outputs() && !node_.output(static_cast<int>(k)).empty();
}

bool NodeContext::has(size_t i) const { return i < num_inputs() && !node_.input(static_cast<int>(i)).empty(); }

Value& NodeContext::value(size_t i) {
  if (!has(i)) fail("onnx: ", where(), ": input ", i, " is missing (the op needs it)");
  return importer_.lookup(node_.input(static_cast<int>(i)), where());
}

Tensor NodeContext::in(size_t i) {
  Value& v = value(i);
  return importer_.tensor(v, where() + " input " + std::to_string(i));
}

std::optional<Tensor> NodeContext::optional(size_t i) {
  if (!has(i)) return std::nullopt;
  return in(i);
}

int NodeContext::onnx_type(size_t i) { return value(i).onnx_type; }

bool NodeContext::known(size_t i) { return has(i) && value(i).known; }

void NodeContext::need_known(size_t i, const std::string& what) const {
  std::string name = has(i) ? escape_bytes(node_.input(static_cast<int>(i))) : std::string("(missing)");
  fail("onnx: ", where(), ": input ", i, " ('", name, "', the ", what,
       ") must be known when the model is loaded (a constant, an initializer, or computed from shapes); "
       "lumen builds static graphs (pass its value in LoadOptions::fixed_inputs if it is a graph input)");
}

std::vector<Expr> NodeContext::exprs(size_t i) {
  Value& v = value(i);
  if (!v.known) need_known(i, "integer values");
  if (!v.reals.empty()) {
    std::vector<Expr> out;
    for (double r : v.reals) out.push_back(Expr(static_cast<int64_t>(r)));
    return out;
  }
  return v.ints;
}

std::vector<int64_t> NodeContext::ints(size_t i) {
  std::vector<int64_t> out;
  for (const Expr& e : exprs(i)) {
    if (!e.is_const()) fail("onnx: ", where(), ": input ", i, " must be concrete, has ", to_string(e));
    out.push_back(e.value());
  }
  return out;
}

std::vector<double> NodeContext::reals(size_t i) {
  Value& v = value(i);
  if (!v.known) need_known(i, "values");
  if (!v.reals.empty() || v.ints.empty()) return v.reals;
  std::vector<double> out;
  for (const Expr& e : v.ints) {
    if (!e.is_const()) fail("onnx: ", where(), ": input ", i, " must be concrete, has ", to_string(e));
    out.push_back(static_cast<double>(e.value()));
  }
  return out;
}

const AttributeProto* NodeContext::find(const std::string& name, int type) {
  for (const AttributeProto& a : node_.attribute()) {
    if (a.name() != name) continue;
    read_.insert(name);
    if (!a.ref_attr_name().empty()) unsupported_attribute(name, "references a function attribute");
    if (a.type() != type) {
      unsupported_attribute(name, "has attribute type " + std::to_string(a.type()) + ", expected " + std::to_string(type));
    }
    return &a;
  }
  return nullptr;
}

bool NodeContext::has_attr(const std::string& name) const {
  for (const AttributeProto& a : node_.attribute()) {
    if (a.name() == name) return true;
  }
  return false;
}

int64_t NodeContext::attr_int(const std::string& name, int64_t fallback) {
  const AttributeProto* a = find(name, AttributeProto::INT);
  return a ? a->i() : fallback;
}

int64_t NodeContext::attr_int(const std::string& name) {
  const AttributeProto* a = find(name, AttributeProto::INT);
  if (!a) fail("onnx: ", where(), ": the required attribute '", name, "' is missing");
  return a->i();
}

double NodeContext::attr_float(const std::string& name, double fallback) {
  const AttributeProto* a = find(name, AttributeProto::FLOAT);
  return a ? a->f() : fallback;
}

std::string NodeContext::attr_string(const std::string& name, const std::string& fallback) {
  const AttributeProto* a = find(name, AttributeProto::STRING);
  return a ? a->s() : fallback;
}

std::vector<int64_t> NodeContext::attr_ints(const std::string& name, const std::vector<int64_t>& fallback) {
  const AttributeProto* a = find(name, AttributeProto::INTS);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
}

std::vector<double> NodeContext::attr_floats(const std::string& name, const std::vector<double>& fallback) {
  const AttributeProto* a = find(name, AttributeProto::FLOATS);
  return a ? std::vector<double>(a->floats().begin(), a->floats().end()) : fallback;
}

std::vector<std::string> NodeContext::attr_strings(const std::string& name, const std::vector<std::string>& fallback) {
  const AttributeProto* a = find(name, AttributeProto::STRINGS);
  return a ? std::vector<std::string>(a->strings().begin(), a->strings().end()) : fallback;
}

const ::onnx::TensorProto& NodeContext::attr_tensor(const std::string& name) {
  const AttributeProto* a = find(name, AttributeProto::TENSOR);
  if (!a) fail("onnx: ", where(), ": the required attribute '", name, "' is missing");
  return a->t();
}

const ::onnx::GraphProto& NodeContext::attr_graph(const std::string& name) {
  const AttributeProto* a = find(name, AttributeProto::GRAPH);
  if (!a) fail("onnx: ", where(), ": the required attribute '", name, "' is missing");
  return a->g();
}

void NodeContext::check_attributes_read() const {
  for (const AttributeProto& a : node_.attribute()) {
    if (!read_.count(a.name())) unsupported_attribute(a.name(), "is not supported by lumen's importer");
  }
}

void NodeContext::unsupported(const std::string& what) const { fail("onnx: ", where(), ": unsupported: ", what); }

void NodeContext::unsupported_attribute(const std::string& attribute, const std::string& why) const {
  fail("onnx: ", where(), ": attribute '", escape_bytes(attribute), "' ", why);
}

std::vector<Value> single(const Tensor& t) { return {Value::of(t, onnx_type_of(t.dtype()))}; }

int onnx_axis(NodeContext& n, int64_t axis, size_t rank, const char* attribute) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) fail("onnx: ", n.where(), ": ", attribute, " ", axis, " is out of range for rank ", rank);
  return static_cast<int>(axis < 0 ? axis + r : axis);
}

}  // namespace lumen::onnx
