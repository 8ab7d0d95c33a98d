#include "lumen/backend/cpu/lanes.h"

#include "lumen/core/error.h"

namespace lumen::cpu {

bool lanes_supported(const kernel::Stmt&) { return false; }

void write_lanes(std::ostream&, const kernel::Stmt&, const std::string&, int*, const ExprPrinter&, const kernel::Kernel&) {
  fail("cpu codegen: lane loops are not supported yet (internal error)");
}

}  // namespace lumen::cpu
