// Value — one ONNX value while a graph is imported: a tensor in the lumen
// graph, elements known at import time (shapes, axes, small constants), or
// both. Known integers are Exprs, so a shape holding a dynamic dim
// (`dim_param`) stays symbolic through Shape -> Gather -> Concat -> Reshape.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lumen/core/tensor.h"
#include "lumen/io/onnx/tensor_data.h"

namespace lumen::onnx {

struct Value {
  std::string name;            // the ONNX name (parameters made from it are named so)
  Tensor tensor;               // defined once the value exists in the graph
  bool none = false;           // an omitted optional input ("")
  bool known = false;          // the elements below are valid
  int onnx_type = 0;           // element type (TensorProto::DataType)
  Shape shape;                 // of the value (known values: concrete)
  std::vector<Expr> ints;      // known integer / bool elements
  std::vector<double> reals;   // known float elements
  std::shared_ptr<const HostTensor> host;  // a large initializer's data, not expanded into ints/reals

  static Value of(const Tensor& t, int onnx_type);
  static Value of_ints(std::vector<Expr> values, std::vector<int64_t> dims, int onnx_type = kInt64);
  static Value of_reals(std::vector<double> values, std::vector<int64_t> dims, int onnx_type = kFloat);
  // Known elements from host data (up to kKnownLimit of them; larger data is kept as `host`).
  static Value of_host(std::shared_ptr<const HostTensor> data);

  bool is_float() const { return onnx_type_is_float(onnx_type); }
  int64_t numel() const;
  std::vector<int64_t> concrete_shape(const std::string& what) const;
};

// Values with at most this many elements are expanded into `ints`/`reals`.
constexpr int64_t kKnownLimit = 4096;

// The ONNX element type corresponding to a lumen dtype (for values computed by lumen ops).
int onnx_type_of(DType dtype);

}  // namespace lumen::onnx
