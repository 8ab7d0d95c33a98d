// LUMEN_DEBUG=topic[,topic...]: what the compiler writes to stderr while it
// works ("kernels", "fusion", "slicing"). Read once per process.
#pragma once

namespace lumen {

bool debug_enabled(const char* topic);

}  // namespace lumen
