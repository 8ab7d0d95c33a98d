#include "lumen/backend/cpu/isa.h"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace lumen::cpu {

namespace {

std::string read_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

Isa detect() {
  Isa isa;
  __builtin_cpu_init();
  isa.avx2 = __builtin_cpu_supports("avx2");
  isa.fma = __builtin_cpu_supports("fma");
  isa.avx512f = __builtin_cpu_supports("avx512f");
  isa.avx512bw = __builtin_cpu_supports("avx512bw");
  isa.avx512vl = __builtin_cpu_supports("avx512vl");
  isa.avx512dq = __builtin_cpu_supports("avx512dq");
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) isa.f16c = (c & bit_F16C) != 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) isa.avx512vnni = (c & (1u << 11)) != 0;  // CPUID.(7,0):ECX[11]
  isa.model = read_model();
  if (const char* limit = std::getenv("LUMEN_ISA")) {
    if (std::strcmp(limit, "avx512") == 0 || std::strcmp(limit, "avx2") == 0 || std::strcmp(limit, "sse") == 0) {
      isa.avx512vnni = false;
    }
    if (std::strcmp(limit, "avx2") == 0 || std::strcmp(limit, "sse") == 0) {
      isa.avx512f = isa.avx512bw = isa.avx512vl = isa.avx512dq = false;
    }
    if (std::strcmp(limit, "sse") == 0) isa.avx2 = isa.fma = isa.f16c = false;
  }
  // Generated code uses AVX-512 only with the full F+BW+VL+DQ set.
  if (!(isa.avx512f && isa.avx512bw && isa.avx512vl && isa.avx512dq)) {
    isa.avx512f = isa.avx512bw = isa.avx512vl = isa.avx512dq = false;
  }
  if (!isa.avx512f) isa.avx512vnni = false;
  if (!(isa.avx2 && isa.fma)) isa.avx2 = isa.fma = false;
  return isa;
}

}  // namespace

std::string Isa::compiler_flags() const {
  std::string f = "-msse4.2";
  if (avx2) f += " -mavx2 -mfma";
  if (f16c) f += " -mf16c";
  if (avx512f) f += " -mavx512f -mavx512bw -mavx512vl -mavx512dq -mprefer-vector-width=512";
  if (avx512vnni) f += " -mavx512vnni";
  return f;
}

std::string Isa::features() const {
  std::string s = "sse4.2";
  if (avx2) s += ",avx2,fma";
  if (f16c) s += ",f16c";
  if (avx512f) s += ",avx512f,avx512bw,avx512vl,avx512dq";
  if (avx512vnni) s += ",avx512vnni";
  return s;
}

const Isa& host_isa() {
  static const Isa isa = detect();
  return isa;
}

}  // namespace lumen::cpu
