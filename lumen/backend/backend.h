// Backend — what a compilation target gives the compiler and the runtime:
// what the machine offers (capabilities), kernels in the loop IR rendered to
// source, source compiled into a loadable module (cached on disk), entries
// looked up in a module, and an entry launched with its buffers and dims,
// split into tasks as the entry decides. `cpu/` implements it; a CUDA or
// OpenCL backend implements the same five things and the compiler does not
// change.
//
// The reference interpreter (`interp/`) is not a Backend: it runs graphs, not
// kernels, and is the oracle every Backend is checked against (the schedule
// search verifies each candidate with interp's point evaluator before it can
// win; tests compare whole programs with the interpreter).
//
// Named lumen::backend::Backend; lumen::Backend is the public enum in
// compile.h that picks a target by name ("interp", "cpu").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lumen/kernel/ir.h"

namespace lumen::backend {

struct Capabilities {
  std::string name;            // "cpu"
  std::string device;          // e.g. the CPU model string
  int f32_lanes = 1;           // widest f32 vector the generated code uses
  std::string isa_features;    // e.g. "avx2,fma,f16c"
  int threads = 1;             // workers a launch is split across
  bool gpu = false;            // kernels run as GPU grids (lumen/backend/gpu): the schedule space adds work-group knobs
  bool bf16_dot = false;       // PairDot is one instruction (cpu: AVX512-BF16's vdpbf16ps): pair_dot schedules are offered
  int64_t l1_bytes = 0, l2_bytes = 0, l3_bytes = 0;  // data caches per core / shared; 0: unknown
  // Kernels run fastest on the backend's own memory (a discrete GPU's): the
  // runtime keeps inputs, intermediates and outputs there (device_alloc and
  // the copies below) and launches on a device_queue.
  bool device_memory = false;
};

// Compiled code, loaded and ready to look entries up in; backend-specific.
class Module {
 public:
  virtual ~Module() = default;
};

// Where launches run, held for a run of launches (cpu: the thread pool, which
// set_global_threads may replace meanwhile; a GPU: a stream).
class Queue {
 public:
  virtual ~Queue() = default;
};

// One kernel's entry points in a module; what the pointers are is up to the
// backend (cpu: the kernel function and its task-count function).
struct Entry {
  void* run = nullptr;
  void* tasks = nullptr;
};

// What a launched kernel reported: bad data it found (a gather index out of range).
struct LaunchStatus {
  int64_t failed = 0, value = 0, bound = 0;
};

struct CompileInfo {
  bool cache_hit = false;
  double seconds = 0;  // time spent compiling (0 on a cache hit)
  std::string object_path;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const char* name() const = 0;
  virtual Capabilities capabilities() const = 0;
  // What decides how fast generated code runs here, as text (cpu: the CPU
  // model, ISA features and compiler version); part of every tuning key.
  virtual std::string fingerprint() const = 0;
  // A name determined by what the kernel computes, so identical kernels (a
  // repeated layer) share one entry.
  virtual std::string kernel_name(const kernel::Kernel& k) const = 0;
  // Source for the kernels in at most `units` units compiled separately into
  // one module (0: as many as compile fastest); kernels sharing a name are
  // rendered once.
  virtual std::vector<std::string> render(const std::vector<kernel::Kernel>& kernels, int units) const = 0;
  virtual std::shared_ptr<Module> compile(const std::vector<std::string>& sources, CompileInfo* info) const = 0;
  // The entry of the kernel named `kernel_name` in `module`; throws Error if missing.
  virtual Entry load(const Module& module, const std::string& kernel_name) const = 0;
  // How many tasks the entry splits into at these dims.
  virtual int64_t tasks(const Entry& entry, const int64_t* dims) const = 0;
  // A queue to launch on; hold it for a run of launches.
  virtual std::shared_ptr<Queue> queue() const = 0;
  // Runs the entry's tasks on `queue` (one of this backend's) over the
  // buffers (in the kernel's buffer order) and dims; returns when done.
  virtual LaunchStatus launch(Queue& queue, const Entry& entry, void* const* buffers, const int64_t* dims) const = 0;

  // Device memory (Capabilities::device_memory backends only; the defaults
  // raise an Error). A device queue's launches take device pointers, are
  // asynchronous and return no status: finish() waits for them and reports
  // the first bad index any of them found.
  virtual void* device_alloc(size_t bytes) const;
  virtual void device_free(void* device) const;
  virtual void copy_to_device(Queue& queue, void* device, const void* host, size_t bytes) const;
  virtual void copy_to_host(Queue& queue, void* host, const void* device, size_t bytes) const;
  virtual std::shared_ptr<Queue> device_queue() const;
  virtual LaunchStatus finish(Queue& queue) const;
};

}  // namespace lumen::backend
