// Keep or recompute: the program boundary and fusion (program_boundary.h,
// fusion_stage.h), then a choice of forward values to compute again instead
// of keeping them in memory until a distant reader (lumen/passes/recompute.h
// does the rewrite).
//
// The choice is made on the arena as the runtime will plan it
// (buffer_lives.h). At the place where the most bytes are alive, a value is a
// candidate when it sits there unread between its early and late readers, it
// can be computed again from values alive there anyway (so recomputing it
// extends no other buffer across the peak), and — in auto mode — its kernel
// costs at most `max_ops_per_element` ALU ops per element (fusion's cost
// model: the steps of a GELU's erf chain 1-10 each, a softmax's exponentials
// ~20, a norm's output ~3; a matmul 2·K, so never one). Its late
// readers then read a copy computed where they run, and the value's buffer
// ends with its early readers: the bytes saved at the peak are its size, the
// extra work its cost times its elements. The rewritten graph is fused again
// and kept only when its foreseen largest live set is smaller (auto); then
// the next peak is tried, up to `max_rounds` times. The report names each
// round's peak, the values recomputed and the live set before and after.
#pragma once

#include <string>

#include "lumen/compiler/pipeline.h"

namespace lumen::compiler {

struct RecomputeOptions {
  // Auto: recompute cheap values where that lowers the foreseen peak. All:
  // every value alive at a peak that can be recomputed from values alive
  // there, whatever it costs and whether or not the peak falls. None: keep all.
  enum class Mode { Auto, None, All };
  Mode mode = Mode::Auto;
  double max_ops_per_element = 48;
  int max_rounds = 8;
};

// "auto", "none", "all".
const char* recompute_mode_name(RecomputeOptions::Mode mode);

// Given p.graph and p.outputs as the graph stages leave them: sets the
// program boundary and the fusion partition (p.writes, p.needed,
// p.materialized, p.cost, p.kernel_nodes) of the graph chosen (p.graph is
// replaced when values are recomputed), and p.recompute. `dims` binds the
// dynamic dims the sizes are foreseen at.
void partition_with_recompute(Pipeline& p, const RecomputeOptions& options, const Bindings& dims);

}  // namespace lumen::compiler
