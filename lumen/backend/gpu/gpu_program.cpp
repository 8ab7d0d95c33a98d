#include "lumen/backend/gpu/gpu_program.h"

#include <cstdio>
#include <cstdlib>
#include <set>

#include "lumen/backend/gpu/gpu_printer.h"
#include "lumen/core/error.h"
#include "lumen/core/expr_eval.h"

namespace lumen::gpu {

std::string fnv_hex(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

int64_t LaunchShape::groups(const int64_t* dims) const {
  Bindings bound;
  for (size_t i = 0; i < kernel.kernel.dims.size(); ++i) bound[kernel.kernel.dims[i]] = dims[i];
  if (evaluate(grid_points(kernel), bound) <= 0) return 0;
  return evaluate(work_groups(kernel), bound);
}

GpuSchedule GpuPrograms::schedule_for(const kernel::Kernel& k) const {
  GpuSchedule s = heuristic_gpu_schedule(k);
  if (k.gpu_reduce >= 0) {  // the schedule's gpu action: 0 thread, 1 group, 2 thread staged
    s.reduce = k.gpu_reduce == 1 ? ReduceMode::Group : ReduceMode::Thread;
    s.stage = k.gpu_reduce == 2;
  }
  if (k.gpu_group > 0) s.group_size = static_cast<int>(k.gpu_group);
  if (const char* mode = std::getenv("LUMEN_GPU_REDUCE")) {
    std::string m = mode;
    if (m == "thread" || m == "group" || m == "stage") {
      s.reduce = m == "group" ? ReduceMode::Group : ReduceMode::Thread;
      s.stage = m == "stage";
    }
  }
  return s;
}

std::string GpuPrograms::kernel_name(const kernel::Kernel& k) const {
  kernel::Kernel canonical = k;
  canonical.name = "x";
  canonical.fused.clear();
  for (kernel::BufferArg& b : canonical.buffers) b.name.clear();
  GpuKernel g = lower_for_gpu(canonical, schedule_for(k));
  return "k" + fnv_hex(print_gpu_kernel(g, dialect_, "x")).substr(0, 12);
}

std::string GpuPrograms::render(const std::vector<kernel::Kernel>& kernels) const {
  std::string source = dialect_.prelude;
  std::set<std::string> seen;
  for (const kernel::Kernel& k : kernels) {
    if (!seen.insert(k.name).second) continue;
    GpuKernel g = lower_for_gpu(k, schedule_for(k));
    std::string entry = "lumen_" + k.name;
    source += "\n" + print_gpu_kernel(g, dialect_, entry);
    auto shape = std::make_shared<LaunchShape>(LaunchShape{g, BufferExtents(k), entry});
    std::lock_guard<std::mutex> lock(mutex_);
    shapes_[k.name] = std::move(shape);
  }
  return source;
}

std::shared_ptr<const LaunchShape> GpuPrograms::shape(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = shapes_.find(name);
  if (it == shapes_.end()) fail(dialect_.name, " backend: kernel '", name, "' was not rendered by this process (render before load)");
  return it->second;
}

}  // namespace lumen::gpu
