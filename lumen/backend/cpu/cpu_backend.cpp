#include "lumen/backend/cpu/cpu_backend.h"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "lumen/backend/cpu/codegen.h"
#include "lumen/backend/cpu/compiler.h"
#include "lumen/backend/cpu/isa.h"
#include "lumen/backend/cpu/launch.h"
#include "lumen/backend/cpu/prelude.h"
#include "lumen/backend/cpu/thread_pool.h"
#include "lumen/core/error.h"

namespace lumen::cpu {

namespace {

// A loaded shared object.
class CpuModule : public backend::Module {
 public:
  explicit CpuModule(std::shared_ptr<Library> library) : library(std::move(library)) {}
  std::shared_ptr<Library> library;
};

// The pool launches run on, held for a run.
class CpuQueue : public backend::Queue {
 public:
  std::shared_ptr<ThreadPool> pool = ThreadPool::global();
};

int64_t cache_bytes(int name) {
  long v = sysconf(name);
  return v > 0 ? static_cast<int64_t>(v) : 0;
}

}  // namespace

backend::Capabilities CpuBackend::capabilities() const {
  const Isa& isa = host_isa();
  backend::Capabilities c;
  c.name = name();
  c.device = isa.model;
  c.f32_lanes = isa.f32_lanes();
  c.isa_features = isa.features();
  c.bf16_dot = isa.avx512_bf16 && isa.f32_lanes() == 16;
  c.threads = ThreadPool::global()->size();
#ifdef _SC_LEVEL1_DCACHE_SIZE
  c.l1_bytes = cache_bytes(_SC_LEVEL1_DCACHE_SIZE);
  c.l2_bytes = cache_bytes(_SC_LEVEL2_CACHE_SIZE);
  c.l3_bytes = cache_bytes(_SC_LEVEL3_CACHE_SIZE);
#endif
  return c;
}

std::string CpuBackend::fingerprint() const {
  const Isa& isa = host_isa();
  // The code lumen writes is part of what was measured: timings and choices cached under other
  // helpers (the prelude, hashed) or another code generator (its version) are measured again.
  static const std::string generator = "codegen v" + std::to_string(kCodegenVersion) + " prelude " +
                                       hash_hex(std::string(prelude()) + vector_prelude(isa.f32_lanes())).substr(0, 12);
  return isa.model + "\n" + isa.features() + "\n" + compiler_version() + "\n" + generator;
}

std::string CpuBackend::kernel_name(const kernel::Kernel& k) const { return content_name(k); }

std::vector<std::string> CpuBackend::render(const std::vector<kernel::Kernel>& kernels, int units) const {
  // Translation units are compiled in parallel: fastest with one per core.
  int parts = units > 0 ? units : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return render_sources(kernels, parts);
}

std::shared_ptr<backend::Module> CpuBackend::compile(const std::vector<std::string>& sources,
                                                     backend::CompileInfo* info) const {
  CompileInfo cpu_info;
  std::shared_ptr<Library> library = compile_and_load(sources, &cpu_info);
  if (info) *info = {cpu_info.cache_hit, cpu_info.seconds, cpu_info.object_path};
  return std::make_shared<CpuModule>(std::move(library));
}

backend::Entry CpuBackend::load(const backend::Module& module, const std::string& kernel_name) const {
  const auto* m = dynamic_cast<const CpuModule*>(&module);
  if (!m) fail("cpu backend: asked to load kernel '", kernel_name, "' from a module another backend compiled");
  return {m->library->symbol("lumen_" + kernel_name), m->library->symbol("lumen_" + kernel_name + "_tasks")};
}

int64_t CpuBackend::tasks(const backend::Entry& entry, const int64_t* dims) const {
  return reinterpret_cast<KernelTasks>(entry.tasks)(dims);
}

std::shared_ptr<backend::Queue> CpuBackend::queue() const { return std::make_shared<CpuQueue>(); }

backend::LaunchStatus CpuBackend::launch(backend::Queue& queue, const backend::Entry& entry, void* const* buffers,
                                         const int64_t* dims) const {
  ThreadPool& pool = *static_cast<CpuQueue&>(queue).pool;
  KernelStatus s = cpu::launch(pool, reinterpret_cast<KernelEntry>(entry.run),
                               reinterpret_cast<KernelTasks>(entry.tasks), buffers, dims);
  return {s.failed, s.value, s.bound};
}

std::shared_ptr<CpuBackend> CpuBackend::shared() {
  static std::shared_ptr<CpuBackend> instance = std::make_shared<CpuBackend>();
  return instance;
}

}  // namespace lumen::cpu
