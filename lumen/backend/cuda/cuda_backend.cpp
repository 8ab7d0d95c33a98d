#include "lumen/backend/cuda/cuda_backend.h"

#include <map>
#include <mutex>
#include <vector>

#include "lumen/backend/cuda/cuda_driver.h"
#include "lumen/core/error.h"

namespace lumen::cuda {

namespace {

struct CudaEntry {
  void* function = nullptr;
  std::shared_ptr<const gpu::LaunchShape> shape;
};

class CudaModule : public backend::Module {
 public:
  ~CudaModule() override {
    if (module) cu_module_unload(module);
  }
  void* module = nullptr;  // null: compiled for an explicit architecture, not loaded
  NvrtcResult nvrtc;
  mutable std::mutex mutex;
  mutable std::map<std::string, std::unique_ptr<CudaEntry>> entries;
};

// A stream; a device queue also holds the status words its launches report
// bad gather indices in (read by finish()).
class CudaQueue : public backend::Queue {
 public:
  explicit CudaQueue(bool device_pointers) : stream(cu_stream_create()), device(device_pointers) {
    if (device) {
      status = cu_alloc(sizeof(int64_t) * 3);
      int64_t zero[3] = {0, 0, 0};
      cu_copy_to_device(status, zero, sizeof zero, stream);
    }
  }
  ~CudaQueue() override {
    if (status) cu_free(status);
    cu_stream_destroy(stream);
  }
  void* stream;
  bool device;
  CuDevicePtr status = 0;
};

// Device copies of one launch's buffers, freed when it is done.
struct DeviceBuffers {
  std::vector<CuDevicePtr> owned;
  ~DeviceBuffers() {
    for (CuDevicePtr p : owned) cu_free(p);
  }
};

// Launches `function` over `groups` work-groups with the kernel's arguments:
// its buffers, its dims, the status words.
void launch_kernel(void* function, const gpu::LaunchShape& shape, int64_t groups, std::vector<CuDevicePtr> pointers,
                   const int64_t* dims, CuDevicePtr status, void* stream) {
  std::vector<int64_t> dim_values(dims, dims + shape.kernel.kernel.dims.size());
  std::vector<void*> args;
  for (CuDevicePtr& p : pointers) args.push_back(&p);
  for (int64_t& d : dim_values) args.push_back(&d);
  args.push_back(&status);
  cu_launch(function, groups, shape.group_size(), stream, args.data());
}

}  // namespace

CudaBackend::CudaBackend(std::string arch) : arch_(std::move(arch)), programs_(gpu::cuda_dialect()) {}

backend::Capabilities CudaBackend::capabilities() const {
  backend::Capabilities c;
  c.name = name();
  c.gpu = true;
  c.f32_lanes = 4;  // the CPU-style schedule's lane loops become 4-wide register tiles (gpu_kernel.h)
  c.device_memory = true;
  if (!arch_.empty()) {  // compile-only: a typical part of the architecture (A100: 108 SMs, H100: 132)
    c.device = "compile only (" + arch_ + ")";
    c.threads = arch_ == "sm_90" ? 132 : 108;
    return c;
  }
  const CudaDevice& d = cuda_device();
  c.device = d.name + " (" + d.arch() + ")";
  c.threads = d.multiprocessors;
  return c;
}

std::string CudaBackend::fingerprint() const {
  std::string arch = arch_.empty() ? cuda_device().arch() : arch_;
  std::string device = arch_.empty() ? cuda_device().name : "compile only";
  return "cuda\n" + device + "\n" + arch + "\nnvrtc " + nvrtc_version();
}

std::string CudaBackend::kernel_name(const kernel::Kernel& k) const { return programs_.kernel_name(k); }

std::vector<std::string> CudaBackend::render(const std::vector<kernel::Kernel>& kernels, int) const {
  return {programs_.render(kernels)};
}

NvrtcResult CudaBackend::compile_for(const std::vector<std::string>& sources, const std::string& arch) const {
  std::string source;
  for (const std::string& s : sources) source += s;
  return nvrtc_compile(source, arch);
}

std::shared_ptr<backend::Module> CudaBackend::compile(const std::vector<std::string>& sources,
                                                      backend::CompileInfo* info) const {
  NvrtcResult r = compile_for(sources, arch_.empty() ? cuda_device().arch() : arch_);
  if (info) *info = {r.cache_hit, r.seconds, r.path + ".cubin"};
  auto module = std::make_shared<CudaModule>();
  module->nvrtc = std::move(r);
  if (arch_.empty()) module->module = cu_module_load(module->nvrtc.cubin);  // compile-only for an explicit arch
  return module;
}

backend::Entry CudaBackend::load(const backend::Module& module, const std::string& kernel_name) const {
  const auto* m = dynamic_cast<const CudaModule*>(&module);
  if (!m) fail("cuda backend: asked to load kernel '", kernel_name, "' from a module another backend compiled");
  std::lock_guard<std::mutex> lock(m->mutex);
  auto& slot = m->entries[kernel_name];
  if (!slot) {
    auto e = std::make_unique<CudaEntry>();
    e->shape = programs_.shape(kernel_name);
    if (m->module) e->function = cu_function(m->module, e->shape->entry);
    slot = std::move(e);
  }
  return {slot.get(), nullptr};
}

const NvrtcResult& CudaBackend::compiled(const backend::Module& module) {
  const auto* m = dynamic_cast<const CudaModule*>(&module);
  if (!m) fail("cuda backend: the module was compiled by another backend");
  return m->nvrtc;
}

int64_t CudaBackend::tasks(const backend::Entry& entry, const int64_t* dims) const {
  return static_cast<CudaEntry*>(entry.run)->shape->groups(dims);
}

std::shared_ptr<backend::Queue> CudaBackend::queue() const { return std::make_shared<CudaQueue>(false); }

std::shared_ptr<backend::Queue> CudaBackend::device_queue() const { return std::make_shared<CudaQueue>(true); }

void* CudaBackend::device_alloc(size_t bytes) const {
  return bytes == 0 ? nullptr : reinterpret_cast<void*>(cu_alloc(bytes));
}

void CudaBackend::device_free(void* device) const {
  if (device) cu_free(reinterpret_cast<CuDevicePtr>(device));
}

void CudaBackend::copy_to_device(backend::Queue& queue, void* device, const void* host, size_t bytes) const {
  if (bytes) cu_copy_to_device(reinterpret_cast<CuDevicePtr>(device), host, bytes, static_cast<CudaQueue&>(queue).stream);
}

void CudaBackend::copy_to_host(backend::Queue& queue, void* host, const void* device, size_t bytes) const {
  if (bytes) {
    cu_copy_to_host(host, reinterpret_cast<CuDevicePtr>(device), bytes, static_cast<CudaQueue&>(queue).stream);
  }
}

backend::LaunchStatus CudaBackend::finish(backend::Queue& queue) const {
  auto& q = static_cast<CudaQueue&>(queue);
  int64_t status[3] = {0, 0, 0};
  if (q.device) cu_copy_to_host(status, q.status, sizeof status, q.stream);
  cu_stream_sync(q.stream);
  return {status[0], status[1], status[2]};
}

backend::LaunchStatus CudaBackend::launch(backend::Queue& queue, const backend::Entry& entry, void* const* buffers,
                                          const int64_t* dims) const {
  const auto& e = *static_cast<CudaEntry*>(entry.run);
  if (!e.function) {
    fail("cuda: kernel ", e.shape->entry, " was compiled for ", arch_, " only (CudaBackend(\"", arch_,
         "\")); compile with backend \"cuda\" on a machine with a GPU to run it");
  }
  auto& q = static_cast<CudaQueue&>(queue);
  void* stream = q.stream;
  const gpu::LaunchShape& shape = *e.shape;
  const kernel::Kernel& k = shape.kernel.kernel;
  int64_t groups = shape.groups(dims);
  if (groups == 0) return {};
  if (q.device) {  // device pointers already; asynchronous, status read by finish()
    std::vector<CuDevicePtr> pointers(k.buffers.size());
    for (size_t i = 0; i < k.buffers.size(); ++i) pointers[i] = reinterpret_cast<CuDevicePtr>(buffers[i]);
    launch_kernel(e.function, shape, groups, pointers, dims, q.status, stream);
    return {};
  }
  bool direct = cuda_device().pageable_access;
  std::vector<int64_t> extents = shape.extents.elements(dims);
  DeviceBuffers device;
  std::vector<CuDevicePtr> pointers(k.buffers.size(), 0);
  std::vector<size_t> bytes(k.buffers.size(), 0);
  for (size_t i = 0; i < k.buffers.size(); ++i) {
    bytes[i] = static_cast<size_t>(extents[i]) * dtype_size(k.buffers[i].dtype);
    if (direct || bytes[i] == 0 || !buffers[i]) {
      pointers[i] = reinterpret_cast<CuDevicePtr>(buffers[i]);
      continue;
    }
    pointers[i] = cu_alloc(bytes[i]);
    device.owned.push_back(pointers[i]);
    cu_copy_to_device(pointers[i], buffers[i], bytes[i], stream);
  }
  int64_t status[3] = {0, 0, 0};
  CuDevicePtr status_ptr = direct ? reinterpret_cast<CuDevicePtr>(status) : cu_alloc(sizeof status);
  if (!direct) {
    device.owned.push_back(status_ptr);
    cu_copy_to_device(status_ptr, status, sizeof status, stream);
  }
  launch_kernel(e.function, shape, groups, pointers, dims, status_ptr, stream);
  for (size_t i = 0; i < k.buffers.size() && !direct; ++i) {
    if (k.buffers[i].output && bytes[i] > 0 && buffers[i]) cu_copy_to_host(buffers[i], pointers[i], bytes[i], stream);
  }
  if (!direct) cu_copy_to_host(status, status_ptr, sizeof status, stream);
  cu_stream_sync(stream);
  return {status[0], status[1], status[2]};
}

std::shared_ptr<CudaBackend> CudaBackend::shared() {
  cuda_device();  // a clear error where there is no GPU
  static std::shared_ptr<CudaBackend> instance = std::make_shared<CudaBackend>();
  return instance;
}

}  // namespace lumen::cuda
