// A 64-bit fingerprint of a graph, its outputs and a parallel plan: ranks
// exchange it at start-up to check they build the same program.
#pragma once

#include <cstdint>
#include <vector>

#include "lumen/core/graph.h"
#include "lumen/dist/sharding.h"

namespace lumen::dist {

uint64_t plan_fingerprint(const Graph& graph, const std::vector<NamedOutput>& outputs, const ParallelSpec& spec);

}  // namespace lumen::dist
