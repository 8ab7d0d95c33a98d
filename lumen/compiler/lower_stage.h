// Lowering: each kernel node with its schedule becomes loop-IR kernels (its
// pre-kernels first, then itself), then the state writes (heuristic
// schedules, run last, so every kernel reads the state as it was before the
// run). Fills p.program's kernels, launches (entries not yet loaded) and
// scratch buffers, and decides which parameter packs are kept between runs.
#pragma once

#include "lumen/compiler/pipeline.h"

namespace lumen::compiler {

void lower_kernels(Pipeline& p);

}  // namespace lumen::compiler
