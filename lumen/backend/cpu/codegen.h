// Renders kernels in the loop IR as C++ source for the host CPU: one
// extern "C" function per kernel plus a function returning how many tasks
// (iterations of its parallel loop) it splits into.
//
//   void lumen_<name>(void* const* buffers, const int64_t* dims,
//                     int64_t task_begin, int64_t task_end, lumen_status* status);
//   int64_t lumen_<name>_tasks(const int64_t* dims);
#pragma once

#include <string>
#include <vector>

#include "lumen/kernel/ir.h"

namespace lumen::cpu {

// Raised whenever the code written for the same kernel changes in a way that
// can change its speed (it is part of the backend's fingerprint, so cached
// schedule timings and graph-level choices are measured again). 2: one
// prefetch per lane's four bytes, vpdpbusd into the offset term; 3: vpdpbusd
// into an i32 accumulator; 4: sibling integer-sum loops fused; 5: Q6_K kept
// six-bit (a nibble and a bit pair a quant); 6: bounded floats convert to i32
// without saturation, remainders of bounded non-negative values are masks.
inline constexpr int kCodegenVersion = 6;

// One translation unit for a list of kernels (with the prelude).
std::string render_source(const std::vector<kernel::Kernel>& kernels);
// The kernels split into up to `parts` translation units of similar size
// (each with the prelude), to compile in parallel. Kernels that share a name
// are rendered once.
std::vector<std::string> render_sources(const std::vector<kernel::Kernel>& kernels, int parts);
// A name determined by what the kernel computes (not by graph labels), so
// identical kernels — e.g. the same layer repeated — compile once.
std::string content_name(const kernel::Kernel& k);
// Just one kernel's functions (no prelude), e.g. for LUMEN_DEBUG dumps.
std::string render_kernel(const kernel::Kernel& k);

}  // namespace lumen::cpu
