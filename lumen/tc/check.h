// Checks of a Def that need no argument shapes, run when it is defined:
// names (duplicates, unknown tensors, assigning to inputs), ranks of reads
// and of definitions, function arities, outputs that are never defined.
#pragma once

#include <string_view>

#include "lumen/tc/ast.h"

namespace lumen::tc {

void check_def(const Def& def, std::string_view source);

}  // namespace lumen::tc
