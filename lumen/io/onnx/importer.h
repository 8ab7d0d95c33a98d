// Importer — walks an ONNX graph in node order and builds the lumen graph:
// graph inputs (dim_param dims as dynamic dims), initializers (weights as
// parameters; small ones also known at import), then each node through the
// op table (op_table.h). Subgraphs (If / Loop bodies) are imported into the
// same lumen graph, seeing the enclosing values.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lumen/io/onnx/model.h"
#include "lumen/io/onnx/value.h"

namespace onnx {
class GraphProto;
class NodeProto;
class ValueInfoProto;
}  // namespace onnx

namespace lumen::onnx {

class Importer {
 public:
  Importer(Model& model, const LoadOptions& options, std::string folder, int opset);

  // The top-level graph: inputs, initializers, nodes, marked outputs.
  void import_main(const ::onnx::GraphProto& graph);
  // A subgraph (If branch, unrolled Loop body) with its formal inputs bound
  // to `inputs`; returns its outputs. Names it defines do not leak out.
  std::vector<Value> import_body(const ::onnx::GraphProto& body, const std::vector<Value>& inputs,
                                 const std::string& where);

  Value& lookup(const std::string& name, const std::string& where);
  // The value as a tensor in the graph (known values become constants or parameters).
  Tensor tensor(Value& v, const std::string& what);
  Graph& graph() { return *model_.graph; }
  int opset() const { return opset_; }
  const std::string& folder() const { return folder_; }

 private:
  void import_node(const ::onnx::NodeProto& node);
  void add_input(const ::onnx::ValueInfoProto& info);
  Tensor parameter(const std::string& name, const Array& data);

  Model& model_;
  const LoadOptions& options_;
  std::string folder_;
  int opset_;
  std::vector<std::map<std::string, Value>> scopes_;
  int constants_ = 0;
};

}  // namespace lumen::onnx
