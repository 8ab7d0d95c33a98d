// Array — a dense, row-major block of host memory with a dtype and a concrete
// shape: what users pass in and get out. It either owns its bytes or borrows
// them (zero-copy from numpy or DLPack), keeping the owner alive.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "lumen/core/dtype.h"
#include "lumen/core/scalar.h"

namespace lumen {

class Array {
 public:
  Array() = default;
  // Zero-filled.
  Array(DType dtype, std::vector<int64_t> shape);
  // f32 data with a shape; the element counts must agree.
  static Array from_floats(const std::vector<float>& data, std::vector<int64_t> shape);
  static Array from_ints(const std::vector<int32_t>& data, std::vector<int64_t> shape);
  static Array from_int64s(const std::vector<int64_t>& data, std::vector<int64_t> shape);
  static Array from_doubles(const std::vector<double>& data, std::vector<int64_t> shape);
  // Borrows `data`; `owner` keeps it alive as long as any copy of this Array.
  static Array borrow(void* data, DType dtype, std::vector<int64_t> shape, std::shared_ptr<void> owner);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  void* data() { return data_; }
  const void* data() const { return data_; }
  bool defined() const { return data_ != nullptr || numel() == 0; }

  // Element `flat` converted to double (bool reads 0/1), and the reverse
  // (rounding to the dtype; integers truncate and saturate).
  // (An I64 element past 2^53 reads rounded: use load/store to keep it exact.)
  double get(int64_t flat) const;
  void set(int64_t flat, double value);
  // Element `flat` exactly (integers as int64), and the reverse, converting
  // as convert_to(dtype(), value) does.
  Scalar load(int64_t flat) const;
  void store(int64_t flat, const Scalar& value);
  std::vector<float> to_floats() const;

  // How many Arrays share this one's memory (1: only this one).
  long owner_count() const { return owner_.use_count(); }

  // A deep copy that owns its bytes.
  Array clone() const;

 private:
  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_;
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
};

std::string shape_string(const std::vector<int64_t>& shape);  // "[3, 4]"
// Nested brackets like PyTorch: [[1, 2], [3, 4]]
std::ostream& operator<<(std::ostream& out, const Array& array);

}  // namespace lumen
