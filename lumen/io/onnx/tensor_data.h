// ONNX tensor data: element types, and TensorProto bytes (inline, typed
// fields or an external file beside the model) decoded into host values.
//
// int64 data is lumen I64 and double is F64: nothing is narrowed (an index
// past 2^31 stays exact). int64 elements are kept as int64_t on the host, so
// values past 2^53 never pass through a double.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lumen/core/array.h"
#include "lumen/core/dtype.h"

namespace onnx {
class TensorProto;
}

namespace lumen::onnx {

// TensorProto::DataType values used by the importer.
enum OnnxType : int {
  kFloat = 1, kUint8 = 2, kInt8 = 3, kUint16 = 4, kInt16 = 5, kInt32 = 6, kInt64 = 7, kString = 8, kBool = 9,
  kFloat16 = 10, kDouble = 11, kUint32 = 12, kUint64 = 13, kBfloat16 = 16
};

const char* onnx_type_name(int onnx_type);  // "float", "int64", ... or "type 23"
bool onnx_type_is_float(int onnx_type);
bool onnx_type_is_integer(int onnx_type);  // integers and bool
// The lumen dtype that holds values of an ONNX element type; throws naming
// `what` for types lumen cannot hold (strings, 16-bit ints, ...).
DType data_dtype(int onnx_type, const std::string& what);

// A TensorProto's contents on the host.
struct HostTensor {
  std::string name;
  int onnx_type = 0;
  std::vector<int64_t> dims;
  std::vector<int64_t> int64s;  // int64 elements as stored (onnx_type == kInt64)
  Array array;                  // every other type, already in its lumen dtype
  int64_t numel() const;
  // Element k as a double / an integer (any type).
  double real(int64_t k) const;
  int64_t integer(int64_t k) const;
  // The data in its lumen dtype (int64 exactly, as I64).
  Array to_array() const;
};

// Decodes a TensorProto; external data is read from files inside `folder`
// (the model's folder) only. Throws naming the tensor on any inconsistency.
HostTensor decode_tensor(const ::onnx::TensorProto& t, const std::string& folder);

}  // namespace lumen::onnx
