// Memory planning: every intermediate buffer gets an offset in one arena,
// reusing space once a buffer's last reader has run.
#pragma once

#include <cstdint>
#include <vector>

namespace lumen {

struct BufferLife {
  int64_t bytes;
  int first;  // step that writes it
  int last;   // last step that reads it
};

struct MemoryPlan {
  std::vector<int64_t> offsets;  // per buffer
  int64_t arena_bytes = 0;       // the arena's size
  int64_t peak_live_bytes = 0;   // the largest sum of simultaneously live buffers (a lower bound)
};

// Greedy best fit, largest buffers first; offsets are 64-byte aligned.
MemoryPlan plan_memory(const std::vector<BufferLife>& buffers);

}  // namespace lumen
