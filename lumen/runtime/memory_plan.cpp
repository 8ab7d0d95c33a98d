#include "lumen/runtime/memory_plan.h"

#include <algorithm>
#include <numeric>

#include "lumen/core/int_math.h"

namespace lumen {

namespace {
int64_t aligned(int64_t bytes) { return (bytes + 63) / 64 * 64; }
}  // namespace

MemoryPlan plan_memory(const std::vector<BufferLife>& buffers) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  int steps = 0;
  for (const BufferLife& b : buffers) steps = std::max(steps, b.last + 1);
  for (int s = 0; s < steps; ++s) {
    int64_t live = 0;
    for (const BufferLife& b : buffers) {
      if (b.first <= s && s <= b.last) live = checked_add(live, aligned(b.bytes));
    }
    plan.peak_live_bytes = std::max(plan.peak_live_bytes, live);
  }
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  struct Placed {
    int64_t offset, size;
    int first, last;
  };
  std::vector<Placed> placed;
  for (size_t i : order) {
    const BufferLife& b = buffers[i];
    int64_t size = aligned(b.bytes);
    // Intervals taken by buffers alive at the same time, sorted by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Placed& p : placed) {
      if (p.first <= b.last && b.first <= p.last) busy.emplace_back(p.offset, p.offset + p.size);
    }
    std::sort(busy.begin(), busy.end());
    int64_t best = -1, best_gap = INT64_MAX, cursor = 0;
    for (const auto& [lo, hi] : busy) {
      if (lo - cursor >= size && lo - cursor < best_gap) {
        best = cursor;
        best_gap = lo - cursor;
      }
      cursor = std::max(cursor, hi);
    }
    if (best < 0) best = cursor;
    plan.offsets[i] = best;
    placed.push_back({best, size, b.first, b.last});
    plan.arena_bytes = std::max(plan.arena_bytes, checked_add(best, size));
  }
  return plan;
}

}  // namespace lumen
