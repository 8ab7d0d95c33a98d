// What differs between the GPU languages lumen prints (OpenCL C, CUDA C):
// qualifiers, the work-item and work-group indices, the barrier, 64-bit
// integer spelling, and the fixed prelude. Everything else — the kernel's
// statements and values — is printed once, by gpu_printer.h.
#pragma once

#include <string>

namespace lumen::gpu {

struct Dialect {
  std::string name;          // "opencl", "cuda"
  std::string kernel_decl;   // before the entry name: "__kernel void", "extern \"C\" __global__ void"
  std::string global_space;  // pointer address space: "__global ", ""
  std::string restrict_kw;   // "restrict", "__restrict__"
  std::string local_decl;    // work-group memory: "__local", "__shared__"
  std::string barrier;       // work-group barrier statement
  std::string global_id, group_id, local_id;  // linear indices (0-th dimension)
  std::string i64;           // 64-bit signed integer type
  std::string i64_suffix;    // literal suffix: "L", "LL"
  std::string u16, u8, i8;   // storage types
  std::string prelude;       // type names, math, conversions, status
};

const Dialect& opencl_dialect();
const Dialect& cuda_dialect();

}  // namespace lumen::gpu
