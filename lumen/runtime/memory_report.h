// Where an arena's bytes go: the buffers alive at the step where the most
// bytes are live, largest first, each with what computes it and the launches
// between which it lives. LUMEN_DEBUG=memory prints it whenever the runtime
// plans an arena (lumen/runtime/compiled_executor.cpp).
#pragma once

#include <string>
#include <vector>

#include "lumen/backend/compiled_program.h"
#include "lumen/runtime/memory_plan.h"

namespace lumen {

// `lives` and `keys` are the planned buffers (node id, or -1 - scratch
// number); at most `rows` buffers are listed.
std::string peak_memory_report(const backend::CompiledProgram& program, const std::vector<BufferLife>& lives,
                               const std::vector<NodeId>& keys, const MemoryPlan& plan, size_t rows = 40);

}  // namespace lumen
