// The helpers every generated source starts with (see prelude.cpp).
#pragma once

#include <string>

namespace lumen::cpu {

const char* prelude();
// SIMD types and vector math for `lanes` f32 lanes (4, 8 or 16).
std::string vector_prelude(int lanes);

}  // namespace lumen::cpu
