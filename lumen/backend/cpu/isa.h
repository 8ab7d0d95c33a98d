// The host CPU's instruction set, detected with cpuid rather than
// -march=native (which misreads the CPU under some hypervisors), and the
// compiler flags that follow from it.
#pragma once

#include <string>

namespace lumen::cpu {

struct Isa {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  // AVX512-VNNI (vpdpbusd: u8 x i8 dot products of 4 into i32 lanes); only
  // with the full AVX-512 set above.
  bool avx512vnni = false;
  std::string model;  // CPU model string

  // Widest f32 vector the generated code should use (4, 8 or 16 lanes).
  int f32_lanes() const { return avx512f ? 16 : avx2 ? 8 : 4; }
  // -m flags for the compiler, e.g. "-mavx2 -mfma -mavx512f ...".
  std::string compiler_flags() const;
  // A short description for cache keys and reports: "avx512f,avx512bw,...".
  std::string features() const;
};

// Detected once per process. LUMEN_ISA=avx512 / avx2 / sse limits it (for
// testing narrower code paths on a wide machine: avx512 keeps F/BW/VL/DQ and
// hides VNNI).
const Isa& host_isa();

}  // namespace lumen::cpu
