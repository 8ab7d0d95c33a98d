// Prints a GpuKernel (gpu_kernel.h) as source in a Dialect (dialect.h): one
// entry function per kernel, readable — one statement a line, loop variables
// named after their axis, a comment naming the fused graph nodes.
//
// Entry arguments, in order: the kernel's buffers (b0, b1, ... in
// Kernel::buffers order), one 64-bit integer per dynamic dim (Kernel::dims
// order), then the status record (three 64-bit integers: failed, value,
// bound) a gather reports an out-of-range index into.
//
// Launch geometry: Thread mode runs ceil(points / group_size) groups of
// group_size items (items past the last point return at once); Group mode
// runs one group of group_size items per grid point.
#pragma once

#include <string>

#include "lumen/backend/gpu/dialect.h"
#include "lumen/backend/gpu/gpu_kernel.h"

namespace lumen::gpu {

// The entry `entry` for `k` (no prelude).
std::string print_gpu_kernel(const GpuKernel& k, const Dialect& dialect, const std::string& entry);

}  // namespace lumen::gpu
