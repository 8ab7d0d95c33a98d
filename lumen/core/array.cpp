#include "lumen/core/array.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "lumen/core/error.h"
#include "lumen/core/host_memory.h"

namespace lumen {

namespace {

int64_t checked_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail("array: shape ", shape_string(shape), " has a negative dim");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) fail("array: shape ", shape_string(shape), " is too large");
    n *= d;
  }
  return n;
}

}  // namespace

Array::Array(DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
  checked_numel(shape_);  // negative dims
  auto bytes = static_cast<size_t>(checked_byte_size(shape_, dtype_, "array"));
  std::shared_ptr<unsigned char> storage = allocate_host(bytes, true);
  data_ = storage.get();
  owner_ = std::move(storage);
}

Array Array::from_floats(const std::vector<float>& data, std::vector<int64_t> shape) {
  Array a(DType::F32, std::move(shape));
  if (static_cast<int64_t>(data.size()) != a.numel()) {
    fail("array: ", data.size(), " values given for shape ", shape_string(a.shape()), " (", a.numel(), " elements)");
  }
  if (!data.empty()) std::memcpy(a.data(), data.data(), data.size() * sizeof(float));
  return a;
}

Array Array::from_ints(const std::vector<int32_t>& data, std::vector<int64_t> shape) {
  Array a(DType::I32, std::move(shape));
  if (static_cast<int64_t>(data.size()) != a.numel()) {
    fail("array: ", data.size(), " values given for shape ", shape_string(a.shape()), " (", a.numel(), " elements)");
  }
  if (!data.empty()) std::memcpy(a.data(), data.data(), data.size() * sizeof(int32_t));
  return a;
}

Array Array::from_int64s(const std::vector<int64_t>& data, std::vector<int64_t> shape) {
  Array a(DType::I64, std::move(shape));
  if (static_cast<int64_t>(data.size()) != a.numel()) {
    fail("array: ", data.size(), " values given for shape ", shape_string(a.shape()), " (", a.numel(), " elements)");
  }
  if (!data.empty()) std::memcpy(a.data(), data.data(), data.size() * sizeof(int64_t));
  return a;
}

Array Array::from_doubles(const std::vector<double>& data, std::vector<int64_t> shape) {
  Array a(DType::F64, std::move(shape));
  if (static_cast<int64_t>(data.size()) != a.numel()) {
    fail("array: ", data.size(), " values given for shape ", shape_string(a.shape()), " (", a.numel(), " elements)");
  }
  if (!data.empty()) std::memcpy(a.data(), data.data(), data.size() * sizeof(double));
  return a;
}

Array Array::borrow(void* data, DType dtype, std::vector<int64_t> shape, std::shared_ptr<void> owner) {
  Array a;
  a.dtype_ = dtype;
  a.shape_ = std::move(shape);
  checked_numel(a.shape_);
  a.data_ = data;
  a.owner_ = std::move(owner);
  return a;
}

int64_t Array::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

double Array::get(int64_t flat) const {
  auto i = static_cast<size_t>(flat);
  switch (dtype_) {
    case DType::F32: return static_cast<const float*>(data_)[i];
    case DType::F16: return half_to_float(static_cast<const uint16_t*>(data_)[i]);
    case DType::BF16: return bf16_to_float(static_cast<const uint16_t*>(data_)[i]);
    case DType::I32: return static_cast<const int32_t*>(data_)[i];
    case DType::Bool: return static_cast<const uint8_t*>(data_)[i] != 0 ? 1.0 : 0.0;
    case DType::I8: return static_cast<const int8_t*>(data_)[i];
    case DType::U8: return static_cast<const uint8_t*>(data_)[i];
    case DType::I64: return static_cast<double>(static_cast<const int64_t*>(data_)[i]);
    case DType::F64: return static_cast<const double*>(data_)[i];
  }
  return 0;
}

void Array::set(int64_t flat, double value) {
  auto i = static_cast<size_t>(flat);
  switch (dtype_) {
    case DType::F32: static_cast<float*>(data_)[i] = static_cast<float>(value); return;
    case DType::F16: static_cast<uint16_t*>(data_)[i] = float_to_half(static_cast<float>(value)); return;
    case DType::BF16: static_cast<uint16_t*>(data_)[i] = float_to_bf16(static_cast<float>(value)); return;
    case DType::I32: static_cast<int32_t*>(data_)[i] = static_cast<int32_t>(saturate_to(dtype_, value)); return;
    case DType::Bool: static_cast<uint8_t*>(data_)[i] = value != 0.0 ? 1 : 0; return;
    case DType::I8: static_cast<int8_t*>(data_)[i] = static_cast<int8_t>(saturate_to(dtype_, value)); return;
    case DType::U8: static_cast<uint8_t*>(data_)[i] = static_cast<uint8_t>(saturate_to(dtype_, value)); return;
    case DType::I64: static_cast<int64_t*>(data_)[i] = saturate_to_i64(value); return;
    case DType::F64: static_cast<double*>(data_)[i] = value; return;
  }
}

Scalar Array::load(int64_t flat) const {
  auto i = static_cast<size_t>(flat);
  switch (dtype_) {
    case DType::I64: return Scalar::of_int(static_cast<const int64_t*>(data_)[i]);
    case DType::I32: return Scalar::of_int(static_cast<const int32_t*>(data_)[i]);
    case DType::I8: return Scalar::of_int(static_cast<const int8_t*>(data_)[i]);
    case DType::U8: return Scalar::of_int(static_cast<const uint8_t*>(data_)[i]);
    case DType::Bool: return Scalar::of_int(static_cast<const uint8_t*>(data_)[i] != 0 ? 1 : 0);
    default: return Scalar::of_float(get(flat));
  }
}

void Array::store(int64_t flat, const Scalar& value) {
  auto i = static_cast<size_t>(flat);
  Scalar v = convert_to(dtype_, value);
  switch (dtype_) {
    case DType::I64: static_cast<int64_t*>(data_)[i] = v.i; return;
    case DType::I32: static_cast<int32_t*>(data_)[i] = static_cast<int32_t>(v.i); return;
    case DType::I8: static_cast<int8_t*>(data_)[i] = static_cast<int8_t>(v.i); return;
    case DType::U8:
    case DType::Bool: static_cast<uint8_t*>(data_)[i] = static_cast<uint8_t>(v.i); return;
    default: set(flat, v.f); return;
  }
}

std::vector<float> Array::to_floats() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  if (dtype_ == DType::F32) {
    if (!out.empty()) std::memcpy(out.data(), data_, out.size() * sizeof(float));
    return out;
  }
  for (int64_t i = 0; i < numel(); ++i) out[static_cast<size_t>(i)] = static_cast<float>(get(i));
  return out;
}

Array Array::clone() const {
  Array copy(dtype_, shape_);
  if (nbytes() > 0) std::memcpy(copy.data(), data_, nbytes());
  return copy;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

namespace {

void print_element(std::ostream& out, const Array& a, int64_t flat) {
  Scalar v = a.load(flat);
  if (v.integral) {
    out << v.i;
  } else {
    out << v.f;
  }
}

}  // namespace

std::ostream& operator<<(std::ostream& out, const Array& a) {
  const auto& shape = a.shape();
  if (shape.empty()) {
    print_element(out, a, 0);
    return out;
  }
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t n = a.numel();
  if (n == 0) return out << "[]";
  for (int64_t f = 0; f < n; ++f) {
    size_t opened = 0;  // brackets that open at this element
    for (size_t d = shape.size(); d-- > 0 && idx[d] == 0;) ++opened;
    for (size_t k = 0; k < opened; ++k) out << '[';
    print_element(out, a, f);
    size_t d = shape.size();
    size_t closed = 0;
    while (d-- > 0) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
      ++closed;
    }
    for (size_t k = 0; k < closed; ++k) out << ']';
    if (f + 1 < n) out << ", ";
  }
  return out;
}

}  // namespace lumen
