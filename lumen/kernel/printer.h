// A readable text form of a Kernel (LUMEN_DEBUG=kernels, tests, reports).
#pragma once

#include <string>

#include "lumen/kernel/ir.h"

namespace lumen::kernel {

std::string to_string(const Value& v);
std::string to_string(const Kernel& k);

}  // namespace lumen::kernel
