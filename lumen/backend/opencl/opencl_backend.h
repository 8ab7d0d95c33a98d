// OpenClBackend — the Backend for an OpenCL device (any GPU with an OpenCL
// driver; PoCL's CPU device where there is none): kernels lowered by
// lumen/backend/gpu and printed as OpenCL C, built with clBuildProgram
// (binaries cached on disk by device and source hash), launched on an
// in-order command queue over buffers that wrap the runtime's host memory
// (CL_MEM_USE_HOST_PTR: no copy on a device sharing host memory; mapped
// back after each launch, which syncs a device that copies).
#pragma once

#include <memory>

#include "lumen/backend/backend.h"
#include "lumen/backend/gpu/gpu_program.h"

namespace lumen::opencl {

class OpenClBackend : public backend::Backend {
 public:
  OpenClBackend();
  const char* name() const override { return "opencl"; }
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

  // One instance per process; throws lumen::Error when no OpenCL device exists.
  static std::shared_ptr<OpenClBackend> shared();

 private:
  gpu::GpuPrograms programs_;
};

}  // namespace lumen::opencl
