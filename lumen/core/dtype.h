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
//
// I64 and F64 are full compute dtypes, appended last so that the numbers of
// the older dtypes (in tuning-cache keys and dumps) keep their meaning. They
// work in every primitive (unary ops need a float: F64 computes in double),
// in the reference interpreter and in the CPU backend's generated C
// (int64_t / double). I64 is exact everywhere: the interpreter carries
// integers as int64 (never through double, see Scalar), constants past 2^53
// are built from exact index expressions, integer sums wrap like PyTorch's
// int64, and gather takes I64 indices. Casting I64 to I32 wraps (as PyTorch);
// floats to any integer dtype truncate and saturate. The CPU backend writes
// kernels that hold a 64-bit value as scalar (per-lane) C, which the C
// compiler may auto-vectorize; lumen's explicit SIMD paths are 32-bit.
enum class DType : uint8_t { F32, F16, BF16, I32, Bool, I8, U8, I64, F64 };

// Every dtype, in enum order.
const std::vector<DType>& all_dtypes();
size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);  // "f32", "f16", "bf16", "i32", "bool", "i8", "u8", "i64", "f64"
DType dtype_from_name(const std::string& name);  // throws Error for unknown names
bool is_float(DType dtype);
bool is_storage_only(DType dtype);  // I8, U8
bool is_wide(DType dtype);          // I64, F64: 8-byte elements
// Truncates toward zero and saturates to an integer dtype's range; NaN -> 0.
// (For I64 the result is a double: exact only below 2^53, see Scalar.)
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

// A double truncated toward zero and saturated to int64's range; NaN -> 0.
int64_t saturate_to_i64(double value);

}  // namespace lumen
