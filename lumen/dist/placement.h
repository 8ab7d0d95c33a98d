// Pipeline placement: which stage computes each node of a graph.
//
// Parameters and states a plan places on a stage pin their consumers to at
// least that stage; a node runs on the latest stage among its operands
// (inputs and constants run wherever they are needed: -1). Then nodes sink to
// a later stage when every consumer is there and moving costs fewer bytes
// across the boundary than it saves: a layer's RMSNorm statistics follow the
// activation they normalise to the next stage instead of being sent next to
// it, while a projection stays with its weight. States never move.
#pragma once

#include <vector>

#include "lumen/core/graph.h"
#include "lumen/dist/sharding.h"

namespace lumen::dist {

// The stage of every node (-1: wherever used); `outputs` are the values read
// whole after a run.
std::vector<int> place_stages(const Graph& graph, const ParallelSpec& spec, const std::vector<NamedOutput>& outputs);

}  // namespace lumen::dist
