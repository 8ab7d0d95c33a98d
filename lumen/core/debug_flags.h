// LUMEN_DEBUG=topic[,topic...]: what the compiler and runtime write to
// stderr while they work ("kernels", "fusion", "slicing", "recompute": the
// keep-or-recompute candidates, "memory": each planned arena's largest live
// set). Read once per process.
#pragma once

namespace lumen {

bool debug_enabled(const char* topic);

}  // namespace lumen
