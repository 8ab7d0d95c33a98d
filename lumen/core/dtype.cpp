#include "lumen/core/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "lumen/core/array.h"
#include "lumen/core/error.h"

namespace lumen {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I32: return 4;
    case DType::Bool: return 1;
    case DType::I8: return 1;
    case DType::U8: return 1;
    case DType::I64: return 8;
    case DType::F64: return 8;
  }
  return 0;
}

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> all{DType::F32, DType::F16, DType::BF16, DType::I32, DType::Bool,
                                      DType::I8,  DType::U8,  DType::I64,  DType::F64};
  return all;
}

int64_t checked_byte_size(const std::vector<int64_t>& dims, DType dtype, const std::string& what) {
  int64_t bytes = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t d : dims) {
    if (d < 0) fail(what, ": shape ", shape_string(dims), " has a negative dim");
    if (__builtin_mul_overflow(bytes, d, &bytes) || bytes > kMaxBufferBytes) {
      for (int64_t e : dims) {
        if (e == 0) return 0;
      }
      fail(what, ": shape ", shape_string(dims), " of ", dtype_name(dtype),
           " is more bytes than lumen can lay out (the limit is 2^56); use a smaller shape");
    }
  }
  return bytes;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::Bool: return "bool";
    case DType::I8: return "i8";
    case DType::U8: return "u8";
    case DType::I64: return "i64";
    case DType::F64: return "f64";
  }
  return "?";
}

DType dtype_from_name(const std::string& name) {
  for (DType d : all_dtypes()) {
    if (name == dtype_name(d)) return d;
  }
  fail("unknown dtype '", name, "' (expected one of f32, f16, bf16, i32, bool, i8, u8, i64, f64)");
}

bool is_float(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F64;
}

bool is_storage_only(DType dtype) { return dtype == DType::I8 || dtype == DType::U8; }

bool is_wide(DType dtype) { return dtype == DType::I64 || dtype == DType::F64; }

int64_t saturate_to_i64(double value) {
  if (std::isnan(value)) return 0;
  if (value >= 0x1p63) return std::numeric_limits<int64_t>::max();
  if (value <= -0x1p63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

double saturate_to(DType dtype, double value) {
  double t = std::isnan(value) ? 0.0 : std::trunc(value);
  switch (dtype) {
    case DType::I32: return std::fmin(std::fmax(t, -2147483648.0), 2147483647.0);
    case DType::I8: return std::fmin(std::fmax(t, -128.0), 127.0);
    case DType::U8: return std::fmin(std::fmax(t, 0.0), 255.0);
    case DType::I64: return static_cast<double>(saturate_to_i64(t));
    case DType::Bool: return value != 0.0 ? 1.0 : 0.0;
    default: return value;
  }
}

uint16_t float_to_half(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exponent = (x >> 23) & 0xffu;
  uint32_t mantissa = x & 0x7fffffu;
  if (exponent == 0xff) {  // inf or NaN; keep NaN quiet and non-zero
    return static_cast<uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u | (mantissa >> 13) : 0u));
  }
  int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
  if (e <= 0) {  // subnormal half or zero
    if (e < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half_mantissa = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (half_mantissa & 1u))) ++half_mantissa;
    return static_cast<uint16_t>(sign | half_mantissa);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into inf: correct
  return static_cast<uint16_t>(half);
}

float half_to_float(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t x;
  if (exponent == 0x1f) {
    x = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      x = sign;
    } else {  // normalise a subnormal
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else {
    x = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(x);
}

uint16_t float_to_bf16(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float bf16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

double round_to_dtype(double value, DType dtype) {
  switch (dtype) {
    case DType::F32: return static_cast<double>(static_cast<float>(value));
    case DType::F16: return half_to_float(float_to_half(static_cast<float>(value)));
    case DType::BF16: return bf16_to_float(float_to_bf16(static_cast<float>(value)));
    default: return value;
  }
}

}  // namespace lumen
