// DistProgram — a graph compiled for one rank of a parallel plan, and the
// driver that runs it: the rank's segments (segments.h) are ordinary
// Programs; between them it starts collectives and transfers on a
// Communicator as soon as their sources are computed and waits for each
// result just before the first segment that reads it.
//
// Every rank of the plan constructs the same DistProgram (same graph, same
// plan) and calls the same methods in the same order (SPMD). Construction
// exchanges a hash of the graph and plan and refuses to go on if any rank
// differs. Inputs are set whole (`set`: a split input keeps this rank's
// chunk, so every rank may load the same checkpoint) or as this rank's chunk
// (`set_local`); outputs are whole on every rank.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lumen/compile.h"
#include "lumen/dist/communicator.h"
#include "lumen/dist/segments.h"

namespace lumen::dist {

struct DistOptions {
  CompileOptions compile;
  int64_t bucket_bytes = int64_t{4} << 20;  // all-reduces of one level sent together up to this size
  Communicator* comm = nullptr;             // default: world()
};

struct DistStats {
  int64_t runs = 0;
  double compute_seconds = 0;  // running this rank's segments
  double wait_seconds = 0;     // waiting for communication results
  int64_t bytes_sent = 0;      // all-reduce / all-gather contributions and transfers sent
};

class DistProgram {
 public:
  // `outputs` are read whole on every rank (named out0, out1, ... unless marked
  // outputs of `graph`). Collective over the communicator's ranks.
  DistProgram(const Graph& graph, const std::vector<Tensor>& outputs, const ParallelSpec& spec,
              const DistOptions& options = {});
  ~DistProgram();
  DistProgram(const DistProgram&) = delete;
  DistProgram& operator=(const DistProgram&) = delete;

  void set(const std::string& input, const Array& whole);  // a split input keeps this rank's chunk
  void set_local(const std::string& input, Array local);   // this rank's chunk already
  bool has_input(const std::string& input) const;          // an input this rank reads
  bool declares_input(const std::string& input) const;     // an input of the graph (any rank)
  void bind(const std::string& dim, int64_t value);
  bool has_dim(const std::string& dim) const;

  void run();
  // Whole on every rank. Under a pipeline plan the output's stage broadcasts
  // it, so every rank must call get() for the same outputs in the same order.
  const Array& get(const std::string& output);
  std::vector<std::string> output_names() const;

  void reset_state();
  // This rank's part of a state (its local shard; only the state's stage holds it).
  const Array& state(const std::string& name) const;
  // States of the same names share buffers with `other` (e.g. prefill and decode).
  void share_state(const DistProgram& other);

  int rank() const { return rank_; }
  int ranks() const { return spec_.ranks(); }
  const ParallelSpec& spec() const { return spec_; }
  const ShardedGraph& sharded() const { return sharded_; }
  size_t segment_count() const { return segments_.size(); }
  const DistStats& stats() const { return stats_; }
  std::string report() const;  // the plan's summary, this rank's segments and communication
  uint64_t plan_hash() const { return hash_; }

 private:
  // A comm's result on this rank.
  struct Flight {
    int group = -1;  // index into plan_.groups (comms this rank contributes to)
    Array result;
    bool ready = false;
    std::unique_ptr<CommRequest> receive;  // a transfer this rank only receives
  };
  // An operation in flight and the buffers it needs alive.
  struct Piece {
    std::unique_ptr<CommRequest> request;
    Array buffer, keep;
    std::string what;
  };
  void compile_segments(const DistOptions& options);
  void share_states_between_segments();
  Bindings bindings_for_run() const;
  void post_receives(const Bindings& b);
  void launch(size_t group);
  void settle(int comm);  // waits for a comm's result and makes it readable
  void complete_group(size_t group);
  void feed(size_t segment, const Bindings& b);
  void reap_sends();
  Array source_value(const LocalComm& c) const;
  Array read_input_or_state(const std::string& name) const;

  Graph graph_;
  ParallelSpec spec_;
  ShardedGraph sharded_;
  LocalGraph local_;
  SegmentPlan plan_;
  std::vector<std::unique_ptr<Program>> segments_;
  Communicator* world_ = nullptr;
  std::unique_ptr<Communicator> group_;  // the shards of this rank's stage
  int rank_ = 0;
  uint64_t hash_ = 0;
  int tag_base_ = 0;

  std::map<std::string, Array> inputs_;             // this rank's chunks
  std::map<std::string, uint64_t> input_version_;
  std::vector<std::map<std::string, uint64_t>> fed_version_;  // per segment
  std::map<std::string, int64_t> explicit_dims_;
  std::map<std::string, size_t> state_owner_;       // state name -> segment owning its buffer
  std::map<std::string, Array> values_;             // "dist.v<id>" of this run
  std::map<std::string, Array> outputs_;            // this run's outputs held here
  std::map<std::string, Array> whole_outputs_;      // after a pipeline broadcast
  std::vector<std::unique_ptr<Flight>> flights_;    // per local comm
  std::vector<std::unique_ptr<Piece>> group_flight_;  // per comm group, while in flight
  std::vector<std::unique_ptr<Piece>> sends_;       // transfers still in flight
  Bindings run_bindings_;
  DistStats stats_;
};

}  // namespace lumen::dist
