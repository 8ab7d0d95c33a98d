// The CUDA driver API, loaded with dlopen (libcuda.so.1) so lumen builds and
// runs where no driver exists: cuInit, the first device's primary context,
// module load from a cubin, function lookup, launches, device memory. Every
// call is checked; a missing driver or device raises lumen::Error saying so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lumen::cuda {

using CuDevicePtr = unsigned long long;

struct CudaDevice {
  int device = 0;
  void* context = nullptr;
  std::string name;
  int major = 0, minor = 0, multiprocessors = 0;
  bool pageable_access = false;  // kernels may use host (pageable) pointers directly
  std::string arch() const { return "sm_" + std::to_string(major) + std::to_string(minor); }
};

// Whether cuInit finds a device; `why` says why not.
bool cuda_device_available(std::string* why = nullptr);
// The process's device (made current on the calling thread); throws when there is none.
const CudaDevice& cuda_device();

// Thin checked wrappers over the driver calls the backend uses.
void* cu_module_load(const std::string& cubin);
void cu_module_unload(void* module);
void* cu_function(void* module, const std::string& name);
void* cu_stream_create();
void cu_stream_destroy(void* stream);
void cu_stream_sync(void* stream);
CuDevicePtr cu_alloc(size_t bytes);
void cu_free(CuDevicePtr p);
void cu_copy_to_device(CuDevicePtr dst, const void* src, size_t bytes, void* stream);
void cu_copy_to_host(void* dst, CuDevicePtr src, size_t bytes, void* stream);
void cu_launch(void* function, int64_t groups, int group_size, void* stream, void** args);

}  // namespace lumen::cuda
