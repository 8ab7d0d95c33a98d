// Host memory for tensors and intermediate buffers. Large blocks are aligned
// to 2 MiB and asked to be backed by transparent huge pages (madvise), as
// numpy and PyTorch do: a kernel streaming tens of MiB then misses the TLB
// once per 2 MiB instead of once per 4 KiB page. LUMEN_NO_HUGE_PAGES=1 turns
// this off (to measure what it does).
#pragma once

#include <cstddef>
#include <memory>

namespace lumen {

// At least `bytes` (0 allowed), 64-byte aligned, zero-filled when `zero`;
// `huge_pages = false` keeps small pages (what a file mapping has: the search
// rig's stand-ins for weights read from a model file). Throws lumen::Error
// when the memory cannot be had.
std::shared_ptr<unsigned char> allocate_host(size_t bytes, bool zero, bool huge_pages = true);

// Blocks from this size up get huge pages.
inline constexpr size_t kHugePageThreshold = size_t{4} << 20;

}  // namespace lumen
