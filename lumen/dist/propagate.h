// Sharding propagation: from a ParallelSpec's annotations of a graph's inputs
// to a sharding and a pipeline stage for every node, and the communication
// the graph needs where a producer's layout is not what its consumer reads.
//
// Shardings flow forward through the primitives (GSPMD-style):
// - elementwise ops take the split of the first operand whose split shows
//   through its view (view_split.h); the other operands are read whole and
//   sliced to this shard's chunk (replicated ones need nothing, split ones an
//   all-gather, partial ones an all-reduce first);
// - a reduction over the split axis yields a partial value (sum or max still
//   to be combined across ranks); sums of partial sums, partial sums scaled by
//   a replicated factor and reductions of partial values stay partial, so a
//   matmul row-split feeding a bias add needs one all-reduce;
// - gather keeps a split of its data off the gathered axis, or of its indices.
// Outputs and replicated states must be replicated; a split state is written
// through its update view's split.
//
// Pipeline stages come from placement.h; a value crossing stages is a
// transfer (send/recv).
//
// Levels order the work: a node's level is the most communication points on
// any path from the sources. Nodes of one level run between two rounds of
// communication (segments.h cuts them into programs).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lumen/core/graph.h"
#include "lumen/dist/sharding.h"

namespace lumen::dist {

enum class CommKind : uint8_t {
  AllReduce,  // partial -> replicated
  AllGather,  // split -> replicated
  Transfer,   // a value sent from one pipeline stage to another
};
const char* comm_kind_name(CommKind kind);

struct CommPoint {
  CommKind kind = CommKind::AllReduce;
  NodeId source = -1;               // the global node whose local output is communicated
  ReduceOp reduce = ReduceOp::Sum;  // AllReduce
  int axis = -1;                    // AllGather: the source's split axis
  int from_stage = 0, to_stage = 0; // Transfer
  int level = 0;                    // the source's level: the comm starts once it is computed
};

// How a consumer reads one operand on its rank.
struct EdgePlan {
  NodeId source = -1;
  View view;                       // the global edge's view
  int comm = -1;                   // >= 0: read that comm's result instead of the source's local output
  std::optional<View> local_view;  // the split shows through: read the local output through this view
  int slice_axis = -1;             // read the whole value, sliced to this shard's chunk of this output axis
  int level = 0;                   // when the value is readable
};

struct NodePlan {
  Sharding sharding;
  int stage = -1;  // -1: runs on any stage that needs it (inputs, constants and what only they feed)
  int level = 0;
  std::vector<EdgePlan> inputs;
};

struct UpdatePlan {
  EdgePlan value;
  std::optional<View> local_target;  // a split state: the target view over the local state
};

struct ShardedGraph {
  ParallelSpec spec;
  std::vector<NamedOutput> output_edges;  // the outputs read whole (named)
  std::vector<NodePlan> nodes;        // by global node id
  std::vector<CommPoint> comms;
  std::vector<EdgePlan> outputs;      // parallel to output_edges (read replicated)
  std::vector<int> output_stage;      // the stage that computes each output
  std::vector<UpdatePlan> updates;    // parallel to the graph's state updates
  std::vector<Expr> conditions;       // on dynamic dims: checked before each run
  int levels() const;
  // "12 nodes split, 3 partial; 2 all-reduce, 1 all-gather, 0 transfer"
  std::string summary() const;
};

// Throws lumen::Error for annotations the graph cannot take (an unknown
// input, an axis out of range or a dim the shards do not divide, a stage
// out of range, a state written through a view that does not keep its split).
// `outputs` are read whole (replicated) on every rank; empty: the graph's marked outputs.
ShardedGraph propagate(const Graph& graph, const ParallelSpec& spec, const std::vector<NamedOutput>& outputs = {});

// The node's shape on one shard (the split axis divided).
Shape local_shape(const Node& node, const Sharding& sharding, int shards);

}  // namespace lumen::dist
