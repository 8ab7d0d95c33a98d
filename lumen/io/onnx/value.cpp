#include "lumen/io/onnx/value.h"

#include "lumen/core/error.h"

namespace lumen::onnx {

namespace {

Shape to_shape(const std::vector<int64_t>& dims) { return Shape(dims.begin(), dims.end()); }

}  // namespace

Value Value::of(const Tensor& t, int onnx_type) {
  Value v;
  v.tensor = t;
  v.onnx_type = onnx_type;
  v.shape = t.shape();
  return v;
}

Value Value::of_ints(std::vector<Expr> values, std::vector<int64_t> dims, int onnx_type) {
  Value v;
  v.known = true;
  v.onnx_type = onnx_type;
  v.shape = to_shape(dims);
  v.ints = std::move(values);
  return v;
}

Value Value::of_reals(std::vector<double> values, std::vector<int64_t> dims, int onnx_type) {
  Value v;
  v.known = true;
  v.onnx_type = onnx_type;
  v.shape = to_shape(dims);
  v.reals = std::move(values);
  return v;
}

Value Value::of_host(std::shared_ptr<const HostTensor> data) {
  Value v;
  v.onnx_type = data->onnx_type;
  v.shape = to_shape(data->dims);
  int64_t n = data->numel();
  if (n <= kKnownLimit) {
    v.known = true;
    if (onnx_type_is_float(v.onnx_type)) {
      for (int64_t k = 0; k < n; ++k) v.reals.push_back(data->real(k));
    } else {
      for (int64_t k = 0; k < n; ++k) v.ints.push_back(Expr(data->integer(k)));
    }
    return v;  // small: the elements are the value
  }
  v.host = std::move(data);
  return v;
}

int64_t Value::numel() const {
  int64_t n = 1;
  for (const Expr& d : shape) {
    if (!d.is_const()) fail("onnx: a value's element count depends on a dynamic dim");
    if (d.value() < 0 || __builtin_mul_overflow(n, d.value(), &n)) fail("onnx: a value's shape ", to_string(shape), " is invalid");
  }
  return n;
}

std::vector<int64_t> Value::concrete_shape(const std::string& what) const {
  std::vector<int64_t> dims;
  for (const Expr& d : shape) {
    if (!d.is_const()) fail("onnx: ", what, ": needs a concrete shape, has ", to_string(shape));
    dims.push_back(d.value());
  }
  return dims;
}

int onnx_type_of(DType dtype) {
  switch (dtype) {
    case DType::F32: return kFloat;
    case DType::F16: return kFloat16;
    case DType::BF16: return kBfloat16;
    case DType::I32: return kInt32;
    case DType::Bool: return kBool;
    case DType::I8: return kInt8;
    case DType::U8: return kUint8;
    case DType::I64: return kInt64;
    case DType::F64: return kDouble;
  }
  return kFloat;
}

}  // namespace lumen::onnx
