// Lane loops (unrolled or vector) emitted in lock step: one copy of the
// control flow, a register (or SIMD vector) per lane. See lanes.cpp.
#pragma once

#include <ostream>
#include <string>

#include "lumen/backend/cpu/codegen_util.h"
#include "lumen/kernel/ir.h"

namespace lumen::cpu {

// True if the lane writer can emit this lane loop; otherwise it is emitted
// as an ordinary loop (always correct, just not in lock step).
bool lanes_supported(const kernel::Stmt& loop);
void write_lanes(std::ostream& out, const kernel::Stmt& loop, const std::string& pad, int* counter,
                 const ExprPrinter& printer, const kernel::Kernel& k);

}  // namespace lumen::cpu
