// One rank's part of a sharded graph: its nodes with their local shapes and
// views, and where communication enters and leaves. A communication result is
// an ordinary Input of the local graph (named "dist.comm<k>"): nothing in the
// graph is a communication op, so the primitive set stays closed and every
// local graph compiles like any other.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lumen/dist/propagate.h"

namespace lumen::dist {

// A communication point as one rank takes part in it.
struct LocalComm {
  int index = -1;          // into ShardedGraph::comms (the same on every rank)
  CommPoint point;
  NodeId source = -1;      // the local node this rank contributes or sends (-1: none)
  NodeId result = -1;      // the local Input that holds the result here (-1: not read here)
  Shape source_shape, result_shape;  // local shapes
  DType dtype = DType::F32;
  std::string name;        // the source's global description, for messages
};

struct LocalOutput {
  std::string name;
  int stage = 0;
  std::optional<Edge> edge;  // on the ranks of that stage
  int level = 0;
};

struct LocalGraph {
  Graph graph;
  std::vector<int> level;                       // by local node id
  std::vector<LocalComm> comms;                 // the ones this rank takes part in, by index order
  std::vector<LocalOutput> outputs;             // parallel to ShardedGraph::output_edges
  std::vector<int> update_level;                // parallel to graph.updates() (this rank's)
  std::map<std::string, Sharding> input_sharding;  // global inputs present here
  std::map<std::string, Shape> input_global_shape;
  int rank = 0, stage = 0, shard = 0;
};

LocalGraph localize(const Graph& global, const ShardedGraph& plan, int rank);

// The comm result input's name for comm `index`.
std::string comm_input_name(int index);

}  // namespace lumen::dist
