// KernelRig — one kernel set up for measuring schedules: random inputs,
// reference values at sampled output elements (from the interpreter's
// per-element evaluator, the oracle), candidates compiled in batches and run
// through the Backend interface, runs timed.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lumen/backend/backend.h"
#include "lumen/core/array.h"
#include "lumen/core/graph.h"
#include "lumen/kernel/lower.h"
#include "lumen/kernel/schedule.h"

namespace lumen::search {

struct Candidate {
  std::vector<kernel::Action> actions;
  kernel::LoweredKernel lowered;
  std::string name;
  std::string error;  // why it could not be built (illegal schedule, compile failure)
  bool tampered = false;
  // After compiling: one entry per launch (pre-kernels, then the kernel).
  std::shared_ptr<backend::Module> module;
  std::vector<backend::Entry> entries;
  std::vector<std::vector<NodeId>> buffers;
  // Launches done once and not timed: packs of parameters, which a program
  // keeps between runs (see lumen/compiler/lower_stage.cpp).
  std::vector<bool> once;
  std::vector<bool> done;
  std::vector<void*> scratch_data;  // its scratch buffers, bound at the first run
};

class KernelRig {
 public:
  // Candidates are compiled and run through `backend`. `parameters_warm`:
  // the program's parameters all fit in the last-level cache, so a run finds
  // them there (the previous run read them): the rig reads them hot too.
  KernelRig(const Graph& graph, NodeId node, const std::vector<bool>& materialized, const Bindings& dims,
            std::shared_ptr<const backend::Backend> backend, bool parameters_warm = false);
  ~KernelRig();
  KernelRig(const KernelRig&) = delete;
  KernelRig& operator=(const KernelRig&) = delete;

  // Lowers `actions` into a candidate (error set if illegal).
  Candidate make(const std::vector<kernel::Action>& actions, const std::string& name);
  // Compiles candidates in parallel batches; failures set `error`.
  void compile(std::vector<Candidate*> candidates, double* seconds);
  // One run of a compiled candidate, in milliseconds (throws Error if the kernel reports bad data).
  double run(Candidate& c);
  // After a run: why the output is wrong, or nothing.
  std::optional<std::string> verify(const Candidate& c, const Array* seed_output);
  const Array& output() const { return output_; }

 private:
  Array& buffer(NodeId n);
  // The data a run reads for buffer `n`: parameters larger than 1 MiB
  // (weights; unless parameters_warm) and any input larger than 32 MiB rotate through identical
  // copies so each run reads them from memory, not cache, as a layer's
  // weights are read in a real program; other inputs and intermediates stay hot.
  void* run_data(NodeId n);
  void bind_scratch(Candidate& c);
  // A backend with its own memory (a GPU): the device copy of host buffer
  // `host` (copied up when first asked for), so runs time the kernels, not
  // the bus; the output is copied down after each run, outside the clock.
  void* on_device(backend::Queue& queue, void* host, size_t bytes);
  size_t host_bytes(NodeId b, const Candidate& c) const;

  const Graph& graph_;
  std::shared_ptr<const backend::Backend> backend_;
  NodeId node_;
  const std::vector<bool>& materialized_;
  Bindings dims_;
  std::vector<int64_t> dim_values_;
  std::map<NodeId, Array> inputs_;
  std::map<NodeId, std::vector<std::shared_ptr<unsigned char>>> copies_;  // cold copies of graph inputs
  bool parameters_warm_ = false;
  int copy_count_ = 0;
  int64_t runs_ = 0;
  Array output_;
  std::map<std::pair<std::string, int>, Array> scratch_;  // (owner, scratch) -> buffer
  std::vector<std::pair<std::vector<int64_t>, Scalar>> reference_;  // sampled element -> value
  double reference_scale_ = 1;
  bool device_memory_ = false;
  std::map<const void*, std::pair<void*, size_t>> device_;  // host buffer -> its device copy and size
};

}  // namespace lumen::search
