// What the GPU backends (OpenCL, CUDA) share above the printer: a kernel's
// content name, its schedule, and the source of a list of kernels in one
// dialect; plus the launch facts the runtimes need per entry (grid points,
// work-group size, buffer extents), kept by name when rendered.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lumen/backend/gpu/buffer_extent.h"
#include "lumen/backend/gpu/dialect.h"
#include "lumen/backend/gpu/gpu_kernel.h"

namespace lumen::gpu {

// FNV-1a of `text`, as 16 hex digits.
std::string fnv_hex(const std::string& text);

// One rendered kernel's launch facts.
struct LaunchShape {
  GpuKernel kernel;
  BufferExtents extents;
  std::string entry;  // the function's name in the source
  // Work-groups and items per group at these dims (groups may be 0: nothing to run).
  int64_t groups(const int64_t* dims) const;
  int64_t group_size() const { return kernel.schedule.group_size; }
  bool group_reduce() const { return kernel.schedule.reduce == ReduceMode::Group; }
};

class GpuPrograms {
 public:
  explicit GpuPrograms(const Dialect& dialect) : dialect_(dialect) {}
  // The schedule a kernel gets: LUMEN_GPU_REDUCE=thread|group|stage forces the mode (tests), else the heuristic.
  GpuSchedule schedule_for(const kernel::Kernel& k) const;
  std::string kernel_name(const kernel::Kernel& k) const;
  // Prelude + every kernel (one per name); remembers each kernel's LaunchShape.
  std::string render(const std::vector<kernel::Kernel>& kernels) const;
  // The launch facts of a rendered kernel; throws Error if none was rendered under that name.
  std::shared_ptr<const LaunchShape> shape(const std::string& name) const;

 private:
  const Dialect& dialect_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::shared_ptr<const LaunchShape>> shapes_;
};

}  // namespace lumen::gpu
