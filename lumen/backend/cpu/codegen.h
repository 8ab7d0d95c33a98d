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

// One translation unit for a list of kernels (with the prelude).
std::string render_source(const std::vector<kernel::Kernel>& kernels);
// Just one kernel's functions (no prelude), e.g. for LUMEN_DEBUG dumps.
std::string render_kernel(const kernel::Kernel& k);

}  // namespace lumen::cpu
