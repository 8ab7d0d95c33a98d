// CompiledExecutor — runs a CompiledProgram (lumen/backend/compiled_program.h)
// through its Backend: intermediates in one arena planned by liveness per
// binding, launches in order, packed parameters kept between runs, state
// writes last. On a backend with its own memory (a GPU) everything lives
// there between runs (device_residency.h). Dynamic dims are kernel arguments, so one compiled program
// runs for any binding; the memory plan is made per binding and reused.
// Compiling is not done here: lumen/compiler makes the program.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lumen/backend/compiled_program.h"
#include "lumen/core/graph.h"
#include "lumen/runtime/device_residency.h"
#include "lumen/runtime/executor.h"
#include "lumen/runtime/memory_plan.h"

namespace lumen {

class CompiledExecutor : public Executor {
 public:
  explicit CompiledExecutor(backend::CompiledProgram program);

  std::vector<Array> execute_by_node(const NodeArrays& inputs, const Bindings& bindings) override;
  const Graph& graph() const override { return *program_.graph; }
  const char* backend_name() const override { return program_.backend ? program_.backend->name() : "cpu"; }
  std::map<std::string, double> stats() const override;
  // The compile's report and, with LUMEN_PROFILE=1, where run time went, kernel by kernel.
  std::string report() const override { return program_.report + profile_report(); }
  std::string profile_report() const;
  std::vector<SearchTrace> search_trace() const override { return program_.search_traces; }
  std::string kernels_dot() const override;
  void invalidate(const std::string& input) override;

  const backend::CompiledProgram& program() const { return program_; }
  const std::vector<kernel::Kernel>& kernels() const { return program_.kernels; }
  const std::string& source() const { return program_.source; }
  // The plan of the last run (arena size vs. largest live set).
  const MemoryPlan& last_plan() const { return plan_; }

 private:
  void plan(const std::vector<int64_t>& dims, const Bindings& bindings);
  void find_lifetimes();
  // Sliced groups (sliced_groups_run.cpp): what a group touches besides its
  // chunk-sized buffers lives through its whole loop; run_group runs the
  // loop over chunks starting at launch `first` and returns its last launch.
  void extend_group_lifetimes();
  using LaunchOne = std::function<void(size_t, const std::vector<void*>&)>;
  size_t run_group(size_t first, const Bindings& bindings, std::vector<int64_t>& dims,
                   const std::vector<void*>& pointer, const std::vector<void*>& scratch, const LaunchOne& launch);

  backend::CompiledProgram program_;

  // Per-binding state.
  std::vector<int64_t> planned_dims_;
  bool planned_ = false;
  MemoryPlan plan_;
  std::vector<NodeId> arena_nodes_;     // nodes with buffer_index_ >= 0
  std::vector<int64_t> buffer_index_;   // node -> index into plan offsets (-1: not in the arena)
  std::vector<int64_t> scratch_index_;  // scratch -> index into plan offsets
  // Lifetimes do not depend on the dims (found once); each buffer's slot in
  // the plan is at least its size at the last planned dims. New dims whose
  // buffers all fit their slots keep the plan (a decode step's growing `past`).
  std::vector<BufferLife> lives_;
  std::vector<NodeId> life_keys_;  // node id, or -1 - scratch number
  std::vector<int64_t> slot_bytes_;
  std::vector<int64_t> fixed_bytes_;  // per life: its size when no dynamic dim changes it, else -1
  std::shared_ptr<unsigned char> arena_;
  int64_t arena_capacity_ = 0;
  std::vector<Array> results_;

  // A backend with its own memory (a GPU): the device twins of the arena,
  // packs, inputs and outputs (null: kernels use host memory); the inputs
  // set since the last run, which it copies up again.
  std::unique_ptr<DeviceResidency> device_;
  std::set<std::string> inputs_set_;
  // Host pointers to device twins before a run; after it, outputs and states copied down.
  void to_device(backend::Queue& queue, const NodeArrays& inputs, std::vector<void*>& pointer,
                 std::vector<void*>& scratch);
  void to_host(backend::Queue& queue, const NodeArrays& inputs, const std::vector<void*>& pointer);

  // Packed parameters kept between runs (by scratch number; undefined: not kept).
  std::vector<Array> kept_;
  std::vector<bool> kept_valid_;

  // LUMEN_PROFILE=1: time per launch, summed over runs; the report lists the
  // 20 slowest kernels, or every kernel with LUMEN_PROFILE=all.
  bool profile_ = false;
  bool profile_all_ = false;
  int64_t runs_ = 0;
  std::vector<double> launch_seconds_;
};

}  // namespace lumen
