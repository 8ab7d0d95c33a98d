// NumPy .npy files (format versions 1-3, little-endian, C order) read into an
// Array: float32/float16/int32/bool/int8/uint8 as they are, int64 narrowed to
// i32 with a range check. Malformed files raise lumen::Error naming the file.
#pragma once

#include <string>

#include "lumen/core/array.h"

namespace lumen::tools {

Array read_npy(const std::string& path);

}  // namespace lumen::tools
