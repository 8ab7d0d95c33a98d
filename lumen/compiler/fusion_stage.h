// Fusion in the pipeline: which nodes of the program's graph get a buffer
// (lumen/kernel/fusion.h), and the kernels to build — the materialised nodes
// the outputs and state writes need, state writes excluded (lower_stage adds
// those last).
#pragma once

#include "lumen/compiler/pipeline.h"

namespace lumen::compiler {

// Given p.graph, p.outputs, p.writes and p.needed (program_boundary.h), sets
// p.materialized, p.ops_per_element, p.kernel_nodes and the report's fusion rounds.
void partition_kernels(Pipeline& p);

}  // namespace lumen::compiler
