// NodeContext — what an op builder sees of one ONNX node: its inputs (as
// graph tensors or as values known at import), its attributes (each read is
// recorded, so an attribute no builder reads is reported as unsupported),
// and errors that name the node and its op type.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lumen/io/onnx/importer.h"

namespace onnx {
class AttributeProto;
class TensorProto;
}  // namespace onnx

namespace lumen::onnx {

class NodeContext {
 public:
  NodeContext(Importer& importer, const ::onnx::NodeProto& node);

  const std::string& op_type() const;
  std::string where() const;  // "node 'conv1' (Conv)"
  Importer& importer() { return importer_; }
  Graph& graph() { return importer_.graph(); }
  int opset() const { return importer_.opset(); }
  const ::onnx::NodeProto& proto() const { return node_; }

  // ---- inputs -----------------------------------------------------------
  size_t num_inputs() const;
  size_t num_outputs() const;
  bool output_used(size_t k) const;  // present and named
  bool has(size_t i) const;  // present and not the empty name
  Value& value(size_t i);
  Tensor in(size_t i);
  std::optional<Tensor> optional(size_t i);
  int onnx_type(size_t i);
  // Elements known at import (shapes, axes, ...); an error naming the node if not known.
  std::vector<Expr> exprs(size_t i);
  std::vector<int64_t> ints(size_t i);
  std::vector<double> reals(size_t i);
  bool known(size_t i);

  // ---- attributes -------------------------------------------------------
  bool has_attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t fallback);
  int64_t attr_int(const std::string& name);  // required
  double attr_float(const std::string& name, double fallback);
  std::string attr_string(const std::string& name, const std::string& fallback);
  std::vector<int64_t> attr_ints(const std::string& name, const std::vector<int64_t>& fallback = {});
  std::vector<double> attr_floats(const std::string& name, const std::vector<double>& fallback = {});
  std::vector<std::string> attr_strings(const std::string& name, const std::vector<std::string>& fallback = {});
  const ::onnx::TensorProto& attr_tensor(const std::string& name);
  const ::onnx::GraphProto& attr_graph(const std::string& name);
  // Fails when the node has an attribute that no builder read.
  void check_attributes_read() const;

  // ---- errors -----------------------------------------------------------
  [[noreturn]] void unsupported(const std::string& what) const;
  [[noreturn]] void unsupported_attribute(const std::string& attribute, const std::string& why) const;
  [[noreturn]] void need_known(size_t i, const std::string& what) const;

 private:
  const ::onnx::AttributeProto* find(const std::string& name, int type);

  Importer& importer_;
  const ::onnx::NodeProto& node_;
  std::set<std::string> read_;
};

using Builder = std::vector<Value> (*)(NodeContext&);

// One output from a tensor, with its ONNX type from the lumen dtype.
std::vector<Value> single(const Tensor& t);
// Normalises an ONNX axis (negative counts from the end) for a rank.
int onnx_axis(NodeContext& n, int64_t axis, size_t rank, const char* attribute = "axis");

}  // namespace lumen::onnx
