// The program's boundary, fixed before anything is fused: every output is a
// fresh contiguous buffer and every state update's value gets its own buffer
// (Contiguous copy nodes are added to the compiled graph where needed), and
// the nodes the outputs and updates depend on are marked needed.
#pragma once

#include <memory>
#include <vector>

#include "lumen/compiler/pipeline.h"

namespace lumen::compiler {

// Given p.graph and p.outputs, adds the copies and sets p.writes and p.needed.
void set_program_boundary(Pipeline& p);

}  // namespace lumen::compiler
