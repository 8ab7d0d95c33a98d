// CudaBackend — the Backend for NVIDIA GPUs: kernels lowered by
// lumen/backend/gpu and printed as CUDA C, compiled by NVRTC for the
// device's architecture (cubins cached on disk, nvrtc.h), loaded and
// launched through the driver API (cuda_driver.h) on a stream.
//
// Rendering and compiling need no GPU (tests compile every kernel for sm_80
// and sm_90 here); shared() — what compile(..., Backend::Cuda) uses — needs
// cuInit to find a device and otherwise raises a lumen::Error saying so.
//
// Memory: compiled programs run on device memory (Capabilities::device_memory:
// the runtime keeps inputs, intermediates and outputs there and launches on a
// device queue, asynchronously, one synchronisation a run). A launch on a
// plain queue (the schedule search's rig) takes host pointers: where the
// device can read pageable host memory (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
// HMM / ATS systems) kernels get them directly; elsewhere each launch copies
// the extents it touches to device memory and its outputs back.
#pragma once

#include <memory>
#include <string>

#include "lumen/backend/backend.h"
#include "lumen/backend/cuda/nvrtc.h"
#include "lumen/backend/gpu/gpu_program.h"

namespace lumen::cuda {

class CudaBackend : public backend::Backend {
 public:
  // `arch` ("sm_80"): compile() targets it and loads nothing (compile-only:
  // launches raise an Error); empty: the device's architecture, loaded to run.
  explicit CudaBackend(std::string arch = "");
  const char* name() const override { return "cuda"; }
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
  void* device_alloc(size_t bytes) const override;
  void device_free(void* device) const override;
  void copy_to_device(backend::Queue& queue, void* device, const void* host, size_t bytes) const override;
  void copy_to_host(backend::Queue& queue, void* host, const void* device, size_t bytes) const override;
  std::shared_ptr<backend::Queue> device_queue() const override;
  backend::LaunchStatus finish(backend::Queue& queue) const override;

  // NVRTC's output for the sources (no device needed): PTX, cubin, ptxas's resource report.
  NvrtcResult compile_for(const std::vector<std::string>& sources, const std::string& arch) const;

  // What NVRTC reported for a module this backend compiled (resources per entry).
  static const NvrtcResult& compiled(const backend::Module& module);

  // The backend on this machine's GPU; throws lumen::Error when cuInit finds none.
  static std::shared_ptr<CudaBackend> shared();

 private:
  std::string arch_;
  gpu::GpuPrograms programs_;
};

}  // namespace lumen::cuda
