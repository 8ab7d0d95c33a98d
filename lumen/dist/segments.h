// Cutting a rank's local graph at its communication points into segments:
// graphs that compile into ordinary Programs, run in order, with collectives
// and transfers started and waited on between them.
//
// Segments follow levels (propagate.h). Within a level, the work feeding each
// group of communications comes first, so a group starts as soon as its
// sources are computed while the rest of the level runs: a data-parallel
// backward pass sends the last layers' gradients while it computes the first
// layers'. Gradient-sized all-reduces of one level are bucketed into groups
// of about `bucket_bytes`.
//
// Values crossing segments are segment outputs named "dist.v<local id>" and
// inputs of the same name; inputs, states and constants are declared in every
// segment that reads them (states share one buffer at run time).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lumen/dist/local_graph.h"

namespace lumen::dist {

using SegmentKey = std::pair<int, int>;  // (level, part)

struct Segment {
  SegmentKey key;
  Graph graph;                             // outputs marked, named as below
  std::vector<std::string> values_out;     // "dist.v<id>": read by later segments or communicated
  std::vector<std::string> outputs;        // program outputs computed here (global names)
  std::vector<std::string> values_in;      // "dist.v<id>" inputs set from earlier segments
  std::vector<int> comms_in;               // positions in LocalGraph::comms whose results it reads
  std::vector<std::string> states;         // state inputs it declares
};

// Communications started together (one bucket): positions in LocalGraph::comms.
struct CommGroup {
  SegmentKey after;        // started once every segment up to this key has run ((level, -1): before the level)
  std::vector<int> comms;
};

struct SegmentPlan {
  std::vector<Segment> segments;  // in run order
  std::vector<CommGroup> groups;  // in start order (the same on every rank of a group)
};

SegmentPlan cut_segments(const LocalGraph& local, int64_t bucket_bytes);

// "dist.v<id>" / the name of program output `name` inside a segment (names starting "dist." are reserved).
std::string value_name(NodeId local);
std::string output_name(const std::string& name);

}  // namespace lumen::dist
