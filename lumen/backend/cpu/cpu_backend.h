// CpuBackend — the Backend for the host CPU: C++ rendered by codegen.h,
// compiled by the system compiler into a shared object (compiler.h, cached
// on disk), entries found by symbol, launched on the global thread pool
// (the queue holds the pool of the moment for a run).
#pragma once

#include <memory>

#include "lumen/backend/backend.h"

namespace lumen::cpu {

class CpuBackend : public backend::Backend {
 public:
  const char* name() const override { return "cpu"; }
  backend::Capabilities capabilities() const override;
  std::string fingerprint() const override;
  std::string kernel_name(const kernel::Kernel& k) const override;
  std::vector<std::string> render(const std::vector<kernel::Kernel>& kernels, int units) const override;
  std::shared_ptr<backend::Module> compile(const std::vector<std::string>& sources,
                                           backend::CompileInfo* info) const override;
  backend::Entry load(const backend::Module& module, const std::string& kernel_name) const override;
  int64_t tasks(const backend::Entry& entry, const int64_t* dims) const override;
  std::shared_ptr<backend::Queue> queue() const override;
  backend::LaunchStatus launch(backend::Queue& queue, const backend::Entry& entry, void* const* buffers,
                               const int64_t* dims) const override;

  // One instance per process (it holds no state of its own).
  static std::shared_ptr<CpuBackend> shared();
};

}  // namespace lumen::cpu
