// Emission: the lowered kernels named by what they compute (repeated layers
// share one entry), rendered to source by the backend, compiled into one
// module (cached on disk), and each launch's entry loaded from it.
// LUMEN_DEBUG=kernels writes the loop IR and the source to stderr.
#pragma once

#include <memory>

#include "lumen/backend/backend.h"
#include "lumen/compiler/pipeline.h"

namespace lumen::compiler {

// Fills p.report (codegen and compile figures) and
// p.program's backend, module, source and launch entries.
void emit_kernels(Pipeline& p, std::shared_ptr<const backend::Backend> backend);

}  // namespace lumen::compiler
