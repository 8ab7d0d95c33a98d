// The simplifier's rewrite rules, as data (see rewrite.h for the notation).
#pragma once

#include <vector>

#include "lumen/core/rewrite.h"

namespace lumen {

const std::vector<rewrite::Rule>& simplifier_rules();

}  // namespace lumen
