#include "lumen/backend/cpu/launch.h"

namespace lumen::cpu {

namespace {

struct LaunchContext {
  KernelEntry entry;
  void* const* buffers;
  const int64_t* dims;
  KernelStatus* status;
};

void trampoline(void* context, int64_t begin, int64_t end) {
  auto* c = static_cast<LaunchContext*>(context);
  c->entry(c->buffers, c->dims, begin, end, c->status);
}

}  // namespace

KernelStatus launch(ThreadPool& pool, KernelEntry entry, KernelTasks tasks, void* const* buffers, const int64_t* dims) {
  KernelStatus status;
  LaunchContext context{entry, buffers, dims, &status};
  pool.run(tasks(dims), trampoline, &context);
  return status;
}

}  // namespace lumen::cpu
