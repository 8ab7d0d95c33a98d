// DType — element types a tensor can hold, with their sizes, names, and the
// half-precision conversions every backend and the interpreter share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lumen {

// I8 and U8 are storage types (quantized weights, bytes): tensors of them can
// be inputs, viewed, gathered, copied and cast; arithmetic needs a cast first.
enum class DType : uint8_t { F32, F16, BF16, I32, Bool, I8, U8 };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);  // "f32", "f16", "bf16", "i32", "bool", "i8", "u8"
DType dtype_from_name(const std::string& name);  // throws Error for unknown names
bool is_float(DType dtype);
bool is_storage_only(DType dtype);  // I8, U8
// Truncates toward zero and saturates to an integer dtype's range; NaN -> 0.
double saturate_to(DType dtype, double value);

// The largest buffer lumen will lay out: every shape's bytes, and sums of
// them (arenas), stay far from int64 overflow.
constexpr int64_t kMaxBufferBytes = int64_t{1} << 56;
// numel(dims) * dtype_size, overflow-checked: a lumen::Error naming `what`,
// the shape and the dtype when it passes kMaxBufferBytes.
int64_t checked_byte_size(const std::vector<int64_t>& dims, DType dtype, const std::string& what);

// IEEE binary16 and bfloat16 <-> float, round to nearest even; NaN stays NaN.
uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);
uint16_t float_to_bf16(float value);
float bf16_to_float(uint16_t bits);

// Rounds a double to the nearest value representable in a float dtype
// (used by the interpreter so every op rounds like the target type would).
double round_to_dtype(double value, DType dtype);

}  // namespace lumen
