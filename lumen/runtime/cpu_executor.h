// CpuExecutor — a graph compiled for the host CPU: fused into kernels,
// rendered as C++, compiled once into a shared object (cached on disk), and
// run on the thread pool with intermediates in one arena planned by liveness.
// Dynamic dims are kernel arguments, so one compiled program runs for any
// binding; the memory plan is made per binding and reused.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lumen/backend/cpu/compiler.h"
#include "lumen/backend/cpu/launch.h"
#include "lumen/core/graph.h"
#include "lumen/kernel/ir.h"
#include "lumen/kernel/lower.h"
#include "lumen/kernel/schedule.h"
#include "lumen/kernel/slicing.h"
#include "lumen/runtime/executor.h"
#include "lumen/runtime/memory_plan.h"
#include "lumen/search/search.h"

namespace lumen {

struct CpuCompileReport {
  int kernels = 0;
  int fusion_rounds = 0;
  double fusion_seconds = 0, lower_seconds = 0, codegen_seconds = 0, compile_seconds = 0;
  bool cache_hit = false;
  std::string object_path;
};

// A schedule chooser: given the kernel's node, returns its action list.
using ScheduleChooser = std::function<std::vector<kernel::Action>(const Graph&, NodeId, const std::vector<bool>&)>;

struct CpuOptions {
  search::SearchOptions search;  // budget 0: heuristic schedules (and tuning cache hits)
  ScheduleChooser choose;        // overrides search (tests)
  kernel::SliceOptions slice;    // sliced execution of groups with large internal buffers
};

class CpuExecutor : public Executor {
 public:
  CpuExecutor(std::shared_ptr<const Graph> graph, std::vector<Edge> outputs, CpuOptions options = {});
  CpuExecutor(std::shared_ptr<const Graph> graph, std::vector<Edge> outputs, ScheduleChooser choose);

  std::vector<Array> execute(const std::map<std::string, Array>& inputs, const Bindings& bindings) override;
  const char* backend_name() const override { return "cpu"; }
  std::map<std::string, double> stats() const override;
  // The search report and, with LUMEN_PROFILE=1, where run time went, kernel by kernel.
  std::string report() const override { return search_report_.to_string() + slice_report_ + profile_report(); }
  std::string profile_report() const;
  std::vector<SearchTrace> search_trace() const override;
  std::string kernels_dot() const override;
  void invalidate(const std::string& input) override;
  const search::SearchReport& search_report() const { return search_report_; }

  const CpuCompileReport& compile_report() const { return report_; }
  const std::vector<kernel::Kernel>& kernels() const { return kernels_; }
  const std::string& source() const { return source_; }
  // The plan of the last run (arena size vs. largest live set).
  const MemoryPlan& last_plan() const { return plan_; }

 private:
  // A buffer key: a graph node id (>= 0) or a scratch buffer (-1 - index).
  struct Launch {
    cpu::KernelEntry run;
    cpu::KernelTasks tasks;
    std::vector<NodeId> buffers;
    size_t kernel;   // index into kernels_
    int group = -1;  // the sliced group it runs in (index into groups_), -1: none
    // In a sliced group: per buffer, how its pointer moves with the chunk (empty: it does not).
    std::vector<std::vector<Expr>> moves;
  };

  void prepare_outputs();
  void prepare_updates();
  void build(const CpuOptions& options);
  void plan(const std::vector<int64_t>& dims, const Bindings& bindings);
  void find_lifetimes();
  void find_kept_packs();
  // Sliced groups: chunk kernels replace the members (slice_kernels); a run
  // loops over the chunks (run_group); shared buffers live through the loop.
  std::vector<NodeId> slice_kernels(std::vector<NodeId> todo, const kernel::SliceOptions& options,
                                    search::SearchOptions& search);
  void choose_chunks(search::ScheduleSearch& search, std::map<NodeId, double>& share, std::vector<NodeId>& todo);
  void attach_to_group(size_t first_kernel, NodeId chunk_member, std::vector<std::vector<NodeId>>& buffer_nodes);
  void extend_group_lifetimes();
  using LaunchOne = std::function<void(size_t, const std::vector<void*>&)>;
  size_t run_group(size_t first, const Bindings& bindings, std::vector<int64_t>& dims,
                   const std::vector<void*>& pointer, const std::vector<void*>& scratch, const LaunchOne& launch);

  std::shared_ptr<Graph> graph_;
  std::vector<Edge> outputs_;
  std::vector<bool> materialized_;
  // A state update: the kernel computing `copy` (a Contiguous of the value)
  // stores into the state's buffer through `view`.
  struct Write {
    NodeId copy, state;
    View view;
  };
  std::vector<Write> writes_;
  // The node each launch computes: -1 for pre-kernels (they fill scratch),
  // kWriteLaunch for state writes (they fill a state buffer).
  static constexpr NodeId kWriteLaunch = -2;
  std::vector<NodeId> kernel_nodes_;
  std::vector<kernel::ScratchBuffer> scratch_;
  std::vector<kernel::Kernel> kernels_;
  std::vector<Launch> launches_;
  std::shared_ptr<cpu::Library> library_;
  std::string source_;
  CpuCompileReport report_;
  search::SearchReport search_report_;
  std::vector<bool> needed_;
  std::vector<kernel::SliceGroup> groups_;
  std::string slice_report_;  // the groups, and the chunks timed for them
  std::map<NodeId, std::pair<int, size_t>> chunk_member_of_;  // chunk copy -> (group, member index)
  std::vector<int> kernel_group_;                               // per kernel: its group, -1: none
  std::vector<std::vector<std::vector<Expr>>> kernel_moves_;    // per kernel: Launch::moves

  // Per-binding state.
  std::vector<int64_t> planned_dims_;
  bool planned_ = false;
  MemoryPlan plan_;
  std::vector<int64_t> buffer_index_;   // node -> index into plan offsets (-1: not in the arena)
  std::vector<int64_t> scratch_index_;  // scratch -> index into plan offsets
  // Lifetimes do not depend on the dims (found once); each buffer's slot in
  // the plan is at least its size at the last planned dims. New dims whose
  // buffers all fit their slots keep the plan (a decode step's growing `past`).
  std::vector<BufferLife> lives_;
  std::vector<NodeId> life_keys_;  // node id, or -1 - scratch number
  std::vector<int64_t> slot_bytes_;
  std::shared_ptr<unsigned char> arena_;
  int64_t arena_capacity_ = 0;
  std::vector<Array> results_;

  // Packed parameters kept between runs (by scratch number; undefined: not kept).
  std::vector<Array> kept_;
  std::vector<bool> kept_valid_;
  std::vector<std::vector<std::string>> kept_inputs_;

  // LUMEN_PROFILE=1: time per launch, summed over runs.
  bool profile_ = false;
  int64_t runs_ = 0;
  std::vector<double> launch_seconds_;
};

}  // namespace lumen
