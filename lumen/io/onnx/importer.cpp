#include "lumen/io/onnx/importer.h"

#include <stdexcept>

#include "lumen/core/error.h"
#include "lumen/io/onnx/narrow_types.h"
#include "lumen/io/onnx/op_table.h"
#include "onnx/onnx.pb.h"

namespace lumen::onnx {

namespace {

bool all_const(const std::vector<Expr>& v) {
  for (const Expr& e : v) {
    if (!e.is_const()) return false;
  }
  return true;
}

// An integer pattern over the element index that yields `values` (row-major).
Expr element_pattern(const std::vector<Expr>& values, const Shape& shape) {
  Expr flat(0);
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + loop_index(shape, d);
  Expr out = values.back();
  for (size_t k = values.size() - 1; k-- > 0;) out = select(eq(flat, Expr(static_cast<int64_t>(k))), values[k], out);
  return out;
}

}  // namespace

Importer::Importer(Model& model, const LoadOptions& options, std::string folder, int opset)
    : model_(model), options_(options), folder_(std::move(folder)), opset_(opset) {
  scopes_.emplace_back();
}

Value& Importer::lookup(const std::string& name, const std::string& where) {
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
    auto it = scope->find(name);
    if (it != scope->end()) return it->second;
  }
  fail("onnx: ", where, ": input '", escape_bytes(name), "' is not defined before it is used");
}

Tensor Importer::parameter(const std::string& base, const Array& data) {
  std::string stem = options_.prefix + (base.empty() ? "onnx_constant" : base);
  std::string name = stem;
  while (graph().find_input(name) >= 0) name = stem + "_" + std::to_string(++constants_);
  Shape shape(data.shape().begin(), data.shape().end());
  Tensor t = graph().parameter(name, shape, data.dtype());
  model_.weights.emplace_back(name, data);
  return t;
}

Tensor Importer::tensor(Value& v, const std::string& what) {
  if (v.tensor.defined()) return v.tensor;
  if (v.none) fail("onnx: ", what, " is an omitted optional input, but the op needs a value");
  DType dtype = data_dtype(v.onnx_type, what);
  if (v.host && !v.known) return v.tensor = parameter(v.name, v.host->to_array());
  if (!v.known) fail("onnx: ", what, " has no value (internal)");
  std::vector<int64_t> dims = v.concrete_shape(what);
  Graph& g = graph();
  if (!v.reals.empty() || onnx_type_is_float(v.onnx_type)) {
    bool uniform = true;
    for (double r : v.reals) uniform = uniform && r == v.reals.front();
    if (uniform) return v.tensor = g.constant(v.reals.empty() ? 0 : v.reals.front(), dtype).expand(v.shape);
    Array a(dtype, dims);
    for (size_t k = 0; k < v.reals.size(); ++k) a.set(static_cast<int64_t>(k), v.reals[k]);
    return v.tensor = parameter(v.name, a);
  }
  // Integers stay exact: constants through constant_int, data through Scalar stores.
  bool uniform = true;
  for (const Expr& e : v.ints) uniform = uniform && e == v.ints.front();
  if (v.ints.empty() || (uniform && v.ints.front().is_const())) {
    return v.tensor = g.constant_int(v.ints.empty() ? 0 : v.ints.front().value(), dtype).expand(v.shape);
  }
  if (!all_const(v.ints) && v.ints.size() <= 64) {
    return v.tensor = g.iota(element_pattern(v.ints, v.shape), v.shape, dtype);
  }
  if (!all_const(v.ints)) fail("onnx: ", what, ": too many symbolic values to make a tensor of");
  Array a(dtype, dims);
  for (size_t k = 0; k < v.ints.size(); ++k) a.store(static_cast<int64_t>(k), Scalar::of_int(v.ints[k].value()));
  return v.tensor = parameter(v.name, a);
}

void Importer::add_input(const ::onnx::ValueInfoProto& info) {
  const std::string& name = info.name();
  std::string what = "graph input '" + escape_bytes(name) + "'";
  if (!info.type().has_tensor_type()) fail("onnx: ", what, " is not a tensor (sequences, maps and optionals are not supported)");
  const auto& tt = info.type().tensor_type();
  auto fixed = options_.fixed_inputs.find(name);
  if (fixed != options_.fixed_inputs.end()) {
    auto host = std::make_shared<HostTensor>();
    host->name = name;
    const Array& given = fixed->second;
    host->onnx_type = tt.elem_type();
    host->dims = given.shape();
    DType dtype = data_dtype(host->onnx_type, what);
    if (host->onnx_type == kInt64) {
      for (int64_t k = 0; k < given.numel(); ++k) host->int64s.push_back(given.load(k).to_int());
    } else if (given.dtype() == dtype) {
      host->array = given;
    } else {  // the element type the model declares, converted exactly as a store does
      host->array = Array(dtype, host->dims);
      for (int64_t k = 0; k < given.numel(); ++k) host->array.store(k, given.load(k));
    }
    Value v = Value::of_host(host);
    v.name = name;
    scopes_.back()[name] = v;
    return;
  }
  DType dtype = data_dtype(tt.elem_type(), what);
  if (!tt.has_shape()) fail("onnx: ", what, " has no shape (lumen needs the rank; give dims or dim_params)");
  Shape shape;
  int k = 0;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0) fail("onnx: ", what, " has a negative dim ", d.dim_value());
      shape.push_back(Expr(d.dim_value()));
    } else {
      std::string dim = d.has_dim_param() && !d.dim_param().empty() ? d.dim_param() : name + "_dim" + std::to_string(k);
      shape.push_back(graph().dim(options_.prefix + dim));
    }
    ++k;
  }
  Value v = Value::of(graph().input(options_.prefix + name, shape, dtype), tt.elem_type());
  v.name = name;
  scopes_.back()[name] = v;
  model_.inputs.push_back(options_.prefix + name);
}

void Importer::import_node(const ::onnx::NodeProto& node) {
  NodeContext n(*this, node);
  bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
  if (!default_domain && node.domain() != kTrainingDomain) {
    fail("onnx: ", n.where(), ": op domain '", escape_bytes(node.domain()), "' is not supported (the default ONNX domain and ",
         kTrainingDomain, " are)");
  }
  const OpTable& table = op_table();
  auto it = table.find(op_key(node.domain(), node.op_type()));
  if (it == table.end()) n.unsupported("op type '" + escape_bytes(node.op_type()) + "' has no lumen mapping");
  check_opset_form(n);
  if (!narrow_type_op_allowed(node.op_type())) {
    for (int i = 0; i < node.input_size(); ++i) {
      if (node.input(i).empty()) continue;
      int type = lookup(node.input(i), n.where()).onnx_type;
      if (is_narrow_type(type)) {
        n.unsupported("input " + std::to_string(i) + " has element type " + onnx_type_name(type) +
                      ", which lumen holds for storage only (casts and movement ops take it)");
      }
    }
  }
  std::vector<Value> outputs;
  try {
    outputs = it->second(n);
  } catch (const std::out_of_range&) {  // .at() on a malformed node (e.g. an empty axes input)
    fail("onnx: ", n.where(), ": an input or attribute has too few elements");
  }
  n.check_attributes_read();
  for (int k = 0; k < node.output_size(); ++k) {
    const std::string& name = node.output(k);
    if (name.empty()) continue;
    if (static_cast<size_t>(k) >= outputs.size()) n.unsupported("output " + std::to_string(k) + " ('" + escape_bytes(name) + "')");
    Value v = outputs[static_cast<size_t>(k)];
    v.name = name;
    // A builder may compute in a wider or narrower dtype (argmax in i32): the
    // value leaves in the dtype its ONNX type names.
    if (v.tensor.defined() && v.onnx_type != 0) {
      DType want = data_dtype(v.onnx_type, n.where() + " output " + std::to_string(k));
      if (v.tensor.dtype() != want) v.tensor = v.tensor.cast(want);
    }
    scopes_.back()[name] = v;
  }
}

void Importer::import_main(const ::onnx::GraphProto& g) {
  for (const auto& init : g.initializer()) {
    Value v = Value::of_host(std::make_shared<HostTensor>(decode_tensor(init, folder_)));
    v.name = init.name();
    scopes_.back()[init.name()] = v;
  }
  if (g.sparse_initializer_size() > 0) fail("onnx: sparse initializers are not supported");
  for (const auto& info : g.input()) {
    if (!scopes_.back().count(info.name())) add_input(info);
  }
  for (const auto& node : g.node()) import_node(node);
  for (const auto& out : g.output()) {
    Value& v = lookup(out.name(), "graph output");
    Tensor t = tensor(v, "graph output '" + escape_bytes(out.name()) + "'");
    graph().mark_output(t, options_.prefix + out.name());
    model_.outputs.push_back(options_.prefix + out.name());
  }
}

std::vector<Value> Importer::import_body(const ::onnx::GraphProto& body, const std::vector<Value>& inputs,
                                         const std::string& where) {
  if (static_cast<size_t>(body.input_size()) != inputs.size()) {
    fail("onnx: ", where, ": the subgraph takes ", body.input_size(), " inputs, ", inputs.size(), " were given");
  }
  scopes_.emplace_back();
  for (const auto& init : body.initializer()) {
    Value v = Value::of_host(std::make_shared<HostTensor>(decode_tensor(init, folder_)));
    v.name = init.name();
    scopes_.back()[init.name()] = v;
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    Value v = inputs[k];
    v.name = body.input(static_cast<int>(k)).name();
    scopes_.back()[v.name] = v;
  }
  std::vector<Value> outputs;
  try {
    for (const auto& node : body.node()) import_node(node);
    for (const auto& out : body.output()) outputs.push_back(lookup(out.name(), where + " subgraph output"));
  } catch (...) {
    scopes_.pop_back();
    throw;
  }
  scopes_.pop_back();
  return outputs;
}

}  // namespace lumen::onnx
