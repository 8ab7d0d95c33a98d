#include "lumen/core/host_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "lumen/core/error.h"

namespace lumen {

std::shared_ptr<unsigned char> allocate_host(size_t bytes, bool zero, bool huge_pages) {
  constexpr size_t kHuge = size_t{2} << 20;
  bool huge = huge_pages && bytes >= kHugePageThreshold && !std::getenv("LUMEN_NO_HUGE_PAGES");
  size_t align = huge ? kHuge : 64;
  size_t size = (std::max<size_t>(bytes, 1) + align - 1) / align * align;
  void* p = std::aligned_alloc(align, size);
  if (!p) fail("out of memory: cannot allocate ", bytes, " bytes");
#ifdef MADV_HUGEPAGE
  if (huge) madvise(p, size, MADV_HUGEPAGE);  // advice only: without THP the pages stay small
#endif
  if (zero) std::memset(p, 0, size);
  return std::shared_ptr<unsigned char>(static_cast<unsigned char*>(p), [](unsigned char* q) { std::free(q); });
}

}  // namespace lumen
