// Running one compiled kernel on the thread pool: the kernel's entry point
// takes (buffers, dims, task range, status); a kernel that finds bad data (a
// gather index out of range) records it in the status and carries on.
#pragma once

#include <cstdint>

#include "lumen/backend/cpu/thread_pool.h"

namespace lumen::cpu {

// Mirrors `lumen_status` in the generated prelude.
struct KernelStatus {
  int64_t failed = 0, value = 0, bound = 0;
};

using KernelEntry = void (*)(void* const* buffers, const int64_t* dims, int64_t begin, int64_t end, void* status);
using KernelTasks = int64_t (*)(const int64_t* dims);

// Runs tasks(dims) tasks of `entry` on `pool`; returns what the kernel reported.
KernelStatus launch(ThreadPool& pool, KernelEntry entry, KernelTasks tasks, void* const* buffers, const int64_t* dims);

}  // namespace lumen::cpu
