#include "lumen/backend/cuda/cuda_driver.h"

#include <dlfcn.h>

#include "lumen/core/error.h"

namespace lumen::cuda {

namespace {

using Result = int;  // CUresult; 0 is CUDA_SUCCESS

struct Driver {
  void* handle = nullptr;
  Result (*init)(unsigned) = nullptr;
  Result (*device_count)(int*) = nullptr;
  Result (*device_get)(int*, int) = nullptr;
  Result (*device_name)(char*, int, int) = nullptr;
  Result (*device_attribute)(int*, int, int) = nullptr;
  Result (*primary_retain)(void**, int) = nullptr;
  Result (*ctx_set_current)(void*) = nullptr;
  Result (*module_load)(void**, const void*) = nullptr;
  Result (*module_unload)(void*) = nullptr;
  Result (*module_function)(void**, void*, const char*) = nullptr;
  Result (*launch)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                   void**) = nullptr;
  Result (*stream_create)(void**, unsigned) = nullptr;
  Result (*stream_destroy)(void*) = nullptr;
  Result (*stream_sync)(void*) = nullptr;
  Result (*mem_alloc)(CuDevicePtr*, size_t) = nullptr;
  Result (*mem_free)(CuDevicePtr) = nullptr;
  Result (*htod)(CuDevicePtr, const void*, size_t, void*) = nullptr;
  Result (*dtoh)(void*, CuDevicePtr, size_t, void*) = nullptr;
  Result (*error_string)(Result, const char**) = nullptr;
  std::string error;
};

template <typename F>
void bind(Driver& d, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(d.handle, name));
  if (!f && d.error.empty()) d.error = std::string("libcuda lacks ") + name;
}

Driver open_driver() {
  Driver d;
  d.handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!d.handle) {
    d.error = "no CUDA driver (libcuda.so.1 could not be loaded): this machine has no NVIDIA GPU driver; "
              "use backend \"opencl\" or \"cpu\"";
    return d;
  }
  bind(d, d.init, "cuInit");
  bind(d, d.device_count, "cuDeviceGetCount");
  bind(d, d.device_get, "cuDeviceGet");
  bind(d, d.device_name, "cuDeviceGetName");
  bind(d, d.device_attribute, "cuDeviceGetAttribute");
  bind(d, d.primary_retain, "cuDevicePrimaryCtxRetain");
  bind(d, d.ctx_set_current, "cuCtxSetCurrent");
  bind(d, d.module_load, "cuModuleLoadData");
  bind(d, d.module_unload, "cuModuleUnload");
  bind(d, d.module_function, "cuModuleGetFunction");
  bind(d, d.launch, "cuLaunchKernel");
  bind(d, d.stream_create, "cuStreamCreate");
  bind(d, d.stream_destroy, "cuStreamDestroy_v2");
  bind(d, d.stream_sync, "cuStreamSynchronize");
  bind(d, d.mem_alloc, "cuMemAlloc_v2");
  bind(d, d.mem_free, "cuMemFree_v2");
  bind(d, d.htod, "cuMemcpyHtoDAsync_v2");
  bind(d, d.dtoh, "cuMemcpyDtoHAsync_v2");
  bind(d, d.error_string, "cuGetErrorString");
  return d;
}

const Driver& driver() {
  static const Driver d = open_driver();
  if (!d.error.empty()) fail("cuda: ", d.error);
  return d;
}

void check(Result r, const char* what) {
  if (r == 0) return;
  const char* text = "unknown error";
  if (driver().error_string) driver().error_string(r, &text);
  fail("cuda: ", what, " failed: ", text, " (", r, ")");
}

CudaDevice open_device() {
  const Driver& d = driver();
  Result r = d.init(0);
  if (r != 0) {
    const char* text = "unknown error";
    d.error_string(r, &text);
    fail("cuda: cuInit found no usable GPU (", text, "); use backend \"opencl\" or \"cpu\"");
  }
  int count = 0;
  check(d.device_count(&count), "cuDeviceGetCount");
  if (count == 0) fail("cuda: cuInit succeeded but there is no CUDA device; use backend \"opencl\" or \"cpu\"");
  CudaDevice c;
  check(d.device_get(&c.device, 0), "cuDeviceGet");
  char name[256] = {0};
  check(d.device_name(name, sizeof name, c.device), "cuDeviceGetName");
  c.name = name;
  check(d.device_attribute(&c.major, 75, c.device), "cuDeviceGetAttribute (major)");
  check(d.device_attribute(&c.minor, 76, c.device), "cuDeviceGetAttribute (minor)");
  check(d.device_attribute(&c.multiprocessors, 16, c.device), "cuDeviceGetAttribute (SMs)");
  int pageable = 0;
  check(d.device_attribute(&pageable, 88, c.device), "cuDeviceGetAttribute (pageable memory access)");
  c.pageable_access = pageable != 0;
  check(d.primary_retain(&c.context, c.device), "cuDevicePrimaryCtxRetain");
  return c;
}

}  // namespace

bool cuda_device_available(std::string* why) {
  try {
    cuda_device();
    return true;
  } catch (const Error& e) {
    if (why) *why = e.what();
    return false;
  }
}

const CudaDevice& cuda_device() {
  static const CudaDevice c = open_device();
  check(driver().ctx_set_current(c.context), "cuCtxSetCurrent");
  return c;
}

void* cu_module_load(const std::string& cubin) {
  cuda_device();
  void* m = nullptr;
  check(driver().module_load(&m, cubin.data()), "cuModuleLoadData");
  return m;
}

void cu_module_unload(void* module) { driver().module_unload(module); }

void* cu_function(void* module, const std::string& name) {
  void* f = nullptr;
  check(driver().module_function(&f, module, name.c_str()), "cuModuleGetFunction");
  return f;
}

void* cu_stream_create() {
  cuda_device();
  void* s = nullptr;
  check(driver().stream_create(&s, 0), "cuStreamCreate");
  return s;
}

void cu_stream_destroy(void* stream) { driver().stream_destroy(stream); }
void cu_stream_sync(void* stream) { check(driver().stream_sync(stream), "cuStreamSynchronize"); }

CuDevicePtr cu_alloc(size_t bytes) {
  CuDevicePtr p = 0;
  check(driver().mem_alloc(&p, bytes), "cuMemAlloc");
  return p;
}

void cu_free(CuDevicePtr p) { driver().mem_free(p); }

void cu_copy_to_device(CuDevicePtr dst, const void* src, size_t bytes, void* stream) {
  check(driver().htod(dst, src, bytes, stream), "cuMemcpyHtoDAsync");
}

void cu_copy_to_host(void* dst, CuDevicePtr src, size_t bytes, void* stream) {
  check(driver().dtoh(dst, src, bytes, stream), "cuMemcpyDtoHAsync");
}

void cu_launch(void* function, int64_t groups, int group_size, void* stream, void** args) {
  if (groups > 0x7fffffff) fail("cuda: a launch of ", groups, " blocks exceeds the grid limit (2^31 - 1)");
  check(driver().launch(function, static_cast<unsigned>(groups), 1, 1, static_cast<unsigned>(group_size), 1, 1, 0,
                        stream, args, nullptr),
        "cuLaunchKernel");
}

}  // namespace lumen::cuda
