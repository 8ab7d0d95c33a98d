#include "lumen/backend/opencl/opencl_backend.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include "lumen/backend/opencl/cl_device.h"
#include "lumen/backend/opencl/cl_program.h"
#include "lumen/core/error.h"

namespace lumen::opencl {

namespace {

// One kernel object of a built program, with what its launches need. A
// cl_kernel's arguments are state, so launches of one entry take turns.
struct ClEntry {
  cl_kernel kernel = nullptr;
  std::shared_ptr<const gpu::LaunchShape> shape;
  std::mutex mutex;
  ~ClEntry() {
    if (kernel) clReleaseKernel(kernel);
  }
};

class ClModule : public backend::Module {
 public:
  ~ClModule() override {
    entries.clear();
    if (program) clReleaseProgram(program);
  }
  cl_program program = nullptr;
  mutable std::mutex mutex;
  mutable std::map<std::string, std::unique_ptr<ClEntry>> entries;
};

class ClQueue : public backend::Queue {
 public:
  ClQueue() {
    cl_int st = CL_SUCCESS;
    queue = clCreateCommandQueue(cl_device().context, cl_device().device, 0, &st);
    check(st, "clCreateCommandQueue");
  }
  ~ClQueue() override {
    clFinish(queue);
    clReleaseCommandQueue(queue);
  }
  cl_command_queue queue = nullptr;
};

// cl_mem objects made for one launch, released when it is done.
struct LaunchBuffers {
  std::vector<cl_mem> mems;
  ~LaunchBuffers() {
    for (cl_mem m : mems) clReleaseMemObject(m);
  }
  cl_mem make(cl_mem_flags flags, size_t bytes, void* host) {
    cl_int st = CL_SUCCESS;
    cl_mem m = clCreateBuffer(cl_device().context, flags, bytes, host, &st);
    check(st, "clCreateBuffer");
    mems.push_back(m);
    return m;
  }
};

}  // namespace

OpenClBackend::OpenClBackend() : programs_(gpu::opencl_dialect()) { cl_device(); }

backend::Capabilities OpenClBackend::capabilities() const {
  backend::Capabilities c;
  c.name = name();
  c.device = cl_device().device_name;
  c.threads = cl_device().compute_units;
  c.gpu = true;
  c.f32_lanes = 4;  // the CPU-style schedule's lane loops become 4-wide register tiles (gpu_kernel.h)
  return c;
}

std::string OpenClBackend::fingerprint() const {
  const ClDevice& d = cl_device();
  return "opencl\n" + d.platform_name + "\n" + d.device_name + "\n" + d.device_version + "\n" + d.driver_version;
}

std::string OpenClBackend::kernel_name(const kernel::Kernel& k) const { return programs_.kernel_name(k); }

std::vector<std::string> OpenClBackend::render(const std::vector<kernel::Kernel>& kernels, int) const {
  return {programs_.render(kernels)};
}

std::shared_ptr<backend::Module> OpenClBackend::compile(const std::vector<std::string>& sources,
                                                        backend::CompileInfo* info) const {
  std::string source;
  for (const std::string& s : sources) source += s;
  BuiltProgram built = build_program(source, fingerprint());
  auto module = std::make_shared<ClModule>();
  module->program = built.program;
  if (info) *info = {built.cache_hit, built.seconds, built.path};
  return module;
}

backend::Entry OpenClBackend::load(const backend::Module& module, const std::string& kernel_name) const {
  const auto* m = dynamic_cast<const ClModule*>(&module);
  if (!m) fail("opencl backend: asked to load kernel '", kernel_name, "' from a module another backend compiled");
  std::lock_guard<std::mutex> lock(m->mutex);
  auto& slot = m->entries[kernel_name];
  if (!slot) {
    auto e = std::make_unique<ClEntry>();
    e->shape = programs_.shape(kernel_name);
    cl_int st = CL_SUCCESS;
    e->kernel = clCreateKernel(m->program, e->shape->entry.c_str(), &st);
    check(st, "clCreateKernel");
    slot = std::move(e);
  }
  return {slot.get(), nullptr};
}

int64_t OpenClBackend::tasks(const backend::Entry& entry, const int64_t* dims) const {
  return static_cast<ClEntry*>(entry.run)->shape->groups(dims);
}

std::shared_ptr<backend::Queue> OpenClBackend::queue() const { return std::make_shared<ClQueue>(); }

backend::LaunchStatus OpenClBackend::launch(backend::Queue& queue, const backend::Entry& entry, void* const* buffers,
                                            const int64_t* dims) const {
  auto& e = *static_cast<ClEntry*>(entry.run);
  cl_command_queue q = static_cast<ClQueue&>(queue).queue;
  const gpu::LaunchShape& shape = *e.shape;
  const kernel::Kernel& k = shape.kernel.kernel;
  int64_t groups = shape.groups(dims);
  if (groups == 0) return {};
  std::vector<int64_t> extents = shape.extents.elements(dims);
  std::lock_guard<std::mutex> lock(e.mutex);
  LaunchBuffers mems;
  std::vector<std::pair<cl_mem, size_t>> outputs;
  cl_uint arg = 0;
  for (size_t i = 0; i < k.buffers.size(); ++i) {
    size_t bytes = static_cast<size_t>(extents[i]) * dtype_size(k.buffers[i].dtype);
    cl_mem m = (bytes == 0 || !buffers[i])
                   ? mems.make(CL_MEM_READ_WRITE, 16, nullptr)  // never touched at these dims
                   : mems.make(CL_MEM_USE_HOST_PTR | (k.buffers[i].output ? CL_MEM_READ_WRITE : CL_MEM_READ_ONLY),
                               bytes, buffers[i]);
    if (bytes > 0 && buffers[i] && k.buffers[i].output) outputs.push_back({m, bytes});
    check(clSetKernelArg(e.kernel, arg++, sizeof m, &m), "clSetKernelArg (buffer)");
  }
  for (size_t i = 0; i < k.dims.size(); ++i) {
    cl_long d = dims[i];
    check(clSetKernelArg(e.kernel, arg++, sizeof d, &d), "clSetKernelArg (dim)");
  }
  cl_long status[3] = {0, 0, 0};
  cl_mem status_mem = mems.make(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof status, status);
  check(clSetKernelArg(e.kernel, arg++, sizeof status_mem, &status_mem), "clSetKernelArg (status)");
  size_t local = static_cast<size_t>(shape.group_size());
  size_t global = static_cast<size_t>(groups) * local;
  check(clEnqueueNDRangeKernel(q, e.kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr), "clEnqueueNDRangeKernel");
  for (auto& [m, bytes] : outputs) {  // host memory holds the results once mapped
    cl_int st = CL_SUCCESS;
    void* p = clEnqueueMapBuffer(q, m, CL_TRUE, CL_MAP_READ, 0, bytes, 0, nullptr, nullptr, &st);
    check(st, "clEnqueueMapBuffer");
    check(clEnqueueUnmapMemObject(q, m, p, 0, nullptr, nullptr), "clEnqueueUnmapMemObject");
  }
  check(clEnqueueReadBuffer(q, status_mem, CL_TRUE, 0, sizeof status, status, 0, nullptr, nullptr), "reading the status");
  return {status[0], status[1], status[2]};
}

std::shared_ptr<OpenClBackend> OpenClBackend::shared() {
  static std::shared_ptr<OpenClBackend> instance = std::make_shared<OpenClBackend>();
  return instance;
}

}  // namespace lumen::opencl
