// The host CPU's instruction set, detected with cpuid rather than
// -march=native (which misreads the CPU under some hypervisors), and the
// compiler flags that follow from it.
#pragma once

#include <string>

namespace lumen::cpu {

struct Isa {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  // Reduced-precision dot products (cpuid leaf 7): vdpbf16ps (AVX512-BF16),
  // vpdpbusd (AVX512-VNNI), AMX tiles (with bf16 and int8 tile products).
  // Each is set only on top of the full AVX-512 set above.
  bool avx512_bf16 = false, avx512_vnni = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;
  std::string model;  // CPU model string

  // Widest f32 vector the generated code should use (4, 8 or 16 lanes).
  int f32_lanes() const { return avx512f ? 16 : avx2 ? 8 : 4; }
  // -m flags for the compiler, e.g. "-mavx2 -mfma -mavx512f ...".
  std::string compiler_flags() const;
  // A short description for cache keys and reports: "avx512f,avx512bw,...".
  std::string features() const;
};

// Detected once per process. LUMEN_ISA limits it (for testing narrower code
// paths on a wide machine): avx2 / sse drop AVX-512 (and what needs it);
// avx512 keeps AVX-512 F/BW/VL/DQ but hides BF16, VNNI and AMX.
const Isa& host_isa();

}  // namespace lumen::cpu
