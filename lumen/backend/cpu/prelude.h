// The helpers every generated source starts with (see prelude.cpp).
#pragma once

namespace lumen::cpu {

const char* prelude();

}  // namespace lumen::cpu
