// The two dialects and their preludes. The helpers match the reference
// interpreter's semantics (floor division, NaN-propagating max, saturating
// casts, half-precision rounding to nearest even), as the CPU prelude does;
// the shared part is written once against a few macros each dialect defines.
#include "lumen/backend/gpu/dialect.h"

namespace lumen::gpu {

namespace {

// Helpers in the common subset of OpenCL C and CUDA C. Needs: lm_i64,
// LM_FN (function qualifier), LM_BITS(float)->uint, LM_FLOAT(uint)->float,
// LM_CLAIM(int pointer) -> 1 for the first caller, LM_GLOBAL (pointer space).
const char* kCommon = R"COMMON(
LM_FN lm_i64 lm_floordiv(lm_i64 a, lm_i64 b) {
  lm_i64 q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
LM_FN lm_i64 lm_floormod(lm_i64 a, lm_i64 b) {
  lm_i64 r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
LM_FN lm_i64 lm_min(lm_i64 a, lm_i64 b) { return a < b ? a : b; }
LM_FN lm_i64 lm_max(lm_i64 a, lm_i64 b) { return a > b ? a : b; }
// NaN-propagating maximum, as the interpreter's MaxReduce.
LM_FN float lm_maxf(float a, float b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
LM_FN int lm_maxi(int a, int b) { return a > b ? a : b; }
// Truncated remainder for integers; x mod 0 is 0 (never a trap).
LM_FN int lm_imod(int a, int b) { return (b == 0 || b == -1) ? 0 : a % b; }
// float -> i32: truncate toward zero, saturate, NaN -> 0.
LM_FN int lm_f2i(float x) {
  if (x != x) return 0;
  if (x >= 2147483647.0f) return 2147483647;
  if (x <= -2147483648.0f) return (-2147483647 - 1);
  return (int)x;
}
LM_FN int lm_sat_i8(lm_i64 x) { return x < -128 ? -128 : x > 127 ? 127 : (int)x; }
LM_FN int lm_sat_u8(lm_i64 x) { return x < 0 ? 0 : x > 255 ? 255 : (int)x; }
LM_FN lm_i64 lm_maxl(lm_i64 a, lm_i64 b) { return a > b ? a : b; }
LM_FN lm_i64 lm_lmod(lm_i64 a, lm_i64 b) { return (b == 0 || b == -1) ? 0 : a % b; }
// float -> i64: truncate toward zero, saturate, NaN -> 0.
LM_FN lm_i64 lm_f2l(float x) {
  if (x != x) return 0;
  if (x >= 9223372036854775808.0f) return 9223372036854775807L;
  if (x <= -9223372036854775808.0f) return (-9223372036854775807L - 1);
  return (lm_i64)x;
}
#ifdef LM_HAS_F64
LM_FN double lm_maxd(double a, double b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
LM_FN lm_i64 lm_d2l(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775808.0) return 9223372036854775807L;
  if (x <= -9223372036854775808.0) return (-9223372036854775807L - 1);
  return (lm_i64)x;
}
LM_FN int lm_d2i(double x) {
  if (x != x) return 0;
  if (x >= 2147483647.0) return 2147483647;
  if (x <= -2147483648.0) return (-2147483647 - 1);
  return (int)x;
}
// Into float's range (NaN kept), so that a narrowing conversion is defined.
LM_FN double lm_clampd(double x) { return x != x ? x : x > 1e30 ? 1e30 : x < -1e30 ? -1e30 : x; }
#endif
LM_FN int lm_sat_i8f(float x) { return x != x ? 0 : x <= -128.0f ? -128 : x >= 127.0f ? 127 : (int)x; }
LM_FN int lm_sat_u8f(float x) { return x != x ? 0 : x <= 0.0f ? 0 : x >= 255.0f ? 255 : (int)x; }
#ifndef LM_F16_CONVERSIONS
LM_FN unsigned short lm_f32_to_f16(float value) {
  unsigned int x = LM_BITS(value);
  unsigned int sign = (x >> 16) & 0x8000u, exponent = (x >> 23) & 0xffu, mantissa = x & 0x7fffffu;
  if (exponent == 0xff) return (unsigned short)(sign | 0x7c00u | (mantissa ? 0x200u | (mantissa >> 13) : 0u));
  int e = (int)exponent - 127 + 15;
  if (e >= 0x1f) return (unsigned short)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (unsigned short)sign;
    mantissa |= 0x800000u;
    unsigned int shift = (unsigned int)(14 - e);
    unsigned int h16 = mantissa >> shift, rest = mantissa & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (h16 & 1u))) ++h16;
    return (unsigned short)(sign | h16);
  }
  unsigned int h16 = sign | ((unsigned int)e << 10) | (mantissa >> 13), rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h16 & 1u))) ++h16;
  return (unsigned short)h16;
}
LM_FN float lm_f16_to_f32(unsigned short bits) {
  unsigned int sign = (unsigned int)(bits & 0x8000u) << 16, exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return LM_FLOAT(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return LM_FLOAT(sign);
    int e = -1;
    do { ++e; mantissa <<= 1; } while ((mantissa & 0x400u) == 0);
    return LM_FLOAT(sign | ((unsigned int)(127 - 15 - e) << 23) | ((mantissa & 0x3ffu) << 13));
  }
  return LM_FLOAT(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}
#endif
LM_FN unsigned short lm_f32_to_bf16(float value) {
  unsigned int x = LM_BITS(value);
  if (value != value) return (unsigned short)((x >> 16) | 0x40u);
  return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
LM_FN float lm_bf16_to_f32(unsigned short bits) { return LM_FLOAT((unsigned int)bits << 16); }
LM_FN float lm_round_f16(float x) { return lm_f16_to_f32(lm_f32_to_f16(x)); }
LM_FN float lm_round_bf16(float x) { return lm_bf16_to_f32(lm_f32_to_bf16(x)); }
// A kernel that finds bad data (a gather index out of range) records the
// first occurrence in status[0..2] and carries on with a safe value.
LM_FN void lm_fail(LM_GLOBAL lm_i64* status, lm_i64 value, lm_i64 bound) {
  if (LM_CLAIM((LM_GLOBAL int*)status)) {
    status[1] = value;
    status[2] = bound;
  }
}
)COMMON";

Dialect make_opencl() {
  Dialect d;
  d.name = "opencl";
  d.kernel_decl = "__kernel void";
  d.global_space = "__global ";
  d.restrict_kw = "restrict";
  d.local_decl = "__local";
  d.barrier = "barrier(CLK_LOCAL_MEM_FENCE);";
  d.global_id = "(lm_i64)get_global_id(0)";
  d.group_id = "(lm_i64)get_group_id(0)";
  d.local_id = "(lm_i64)get_local_id(0)";
  d.i64 = "lm_i64";
  d.i64_suffix = "L";
  d.u16 = "ushort";
  d.u8 = "uchar";
  d.i8 = "char";
  d.prelude = std::string(R"CL(// Generated by lumen (OpenCL C). Each kernel is one fused group of graph nodes.
typedef long lm_i64;
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define LM_HAS_F64 1
#endif
#define LM_FN inline
#define LM_GLOBAL __global
#define LM_BITS(f) as_uint(f)
#define LM_FLOAT(u) as_float(u)
#define LM_CLAIM(p) (atomic_cmpxchg((volatile __global int*)(p), 0, 1) == 0)
#define LM_NAN NAN
#define LM_INF INFINITY
#define lm_log2(x) log2(x)
#define lm_exp2(x) exp2(x)
#define lm_sin(x) sin(x)
#define lm_sqrt(x) sqrt(x)
#define lm_fmod(a, b) fmod(a, b)
#define lm_log2d(x) log2(x)
#define lm_exp2d(x) exp2(x)
#define lm_sind(x) sin(x)
#define lm_sqrtd(x) sqrt(x)
#define lm_fmodd(a, b) fmod(a, b)
)CL") + kCommon;
  return d;
}

Dialect make_cuda() {
  Dialect d;
  d.name = "cuda";
  d.kernel_decl = "extern \"C\" __global__ void";
  d.global_space = "";
  d.restrict_kw = "__restrict__";
  d.local_decl = "__shared__";
  d.barrier = "__syncthreads();";
  d.global_id = "((lm_i64)blockIdx.x * (lm_i64)blockDim.x + (lm_i64)threadIdx.x)";
  d.group_id = "(lm_i64)blockIdx.x";
  d.local_id = "(lm_i64)threadIdx.x";
  d.i64 = "lm_i64";
  d.i64_suffix = "LL";
  d.u16 = "unsigned short";
  d.u8 = "unsigned char";
  d.i8 = "signed char";
  d.prelude = std::string(R"CU(// Generated by lumen (CUDA C). Each kernel is one fused group of graph nodes.
typedef long long lm_i64;
#define LM_HAS_F64 1
#define LM_FN static __device__ __forceinline__
#define LM_GLOBAL
#define LM_BITS(f) __float_as_uint(f)
#define LM_FLOAT(u) __uint_as_float(u)
#define LM_CLAIM(p) (atomicCAS((int*)(p), 0, 1) == 0)
#define LM_NAN __int_as_float(0x7fc00000)
#define LM_INF __int_as_float(0x7f800000)
#define lm_log2(x) log2f(x)
#define lm_exp2(x) exp2f(x)
#define lm_sin(x) sinf(x)
#define lm_sqrt(x) sqrtf(x)
#define lm_fmod(a, b) fmodf(a, b)
#define lm_log2d(x) log2(x)
#define lm_exp2d(x) exp2(x)
#define lm_sind(x) sin(x)
#define lm_sqrtd(x) sqrt(x)
#define lm_fmodd(a, b) fmod(a, b)
// Half precision through the hardware's conversions (round to nearest even, as the interpreter).
#define LM_F16_CONVERSIONS 1
LM_FN unsigned short lm_f32_to_f16(float value) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(value));
  return h;
}
LM_FN float lm_f16_to_f32(unsigned short bits) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
  return f;
}
)CU") + kCommon;
  return d;
}

}  // namespace

const Dialect& opencl_dialect() {
  static const Dialect d = make_opencl();
  return d;
}

const Dialect& cuda_dialect() {
  static const Dialect d = make_cuda();
  return d;
}

}  // namespace lumen::gpu
