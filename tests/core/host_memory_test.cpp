// Host memory: large blocks 2 MiB aligned (huge-page candidates), small ones
// 64-byte aligned, zero-filled when asked; Arrays use it.
#include "lumen/core/host_memory.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "lumen/core/array.h"

namespace lumen {
namespace {

uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(HostMemory, LargeBlocksAreHugePageAlignedAndZeroed) {
  size_t bytes = kHugePageThreshold + 12345;
  std::shared_ptr<unsigned char> p = allocate_host(bytes, true);
  ASSERT_TRUE(p);
  EXPECT_EQ(address(p.get()) % (size_t{2} << 20), 0u);
  bool zero = true;
  for (size_t i = 0; i < bytes; i += 4093) zero = zero && p.get()[i] == 0;
  EXPECT_TRUE(zero && p.get()[bytes - 1] == 0);
}

TEST(HostMemory, SmallBlocksAreSimdAligned) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, size_t{1} << 20}) {
    std::shared_ptr<unsigned char> p = allocate_host(bytes, true);
    ASSERT_TRUE(p);
    EXPECT_EQ(address(p.get()) % 64, 0u) << bytes;
  }
}

TEST(HostMemory, ArraysOfManyMegabytesUseIt) {
  Array a(DType::F32, {1024, 1025});  // just over 4 MiB
  EXPECT_EQ(address(a.data()) % (size_t{2} << 20), 0u);
  EXPECT_EQ(a.get(a.numel() - 1), 0.0);
}

}  // namespace
}  // namespace lumen
