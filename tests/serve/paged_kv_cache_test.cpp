// PagedKvCache: blocks taken and returned without moving a sequence's rows,
// refusals when the pool is short, rows written where the table says.
#include "lumen/serve/paged_kv_cache.h"

#include <gtest/gtest.h>

#include "lumen/core/error.h"

namespace lumen::serve {
namespace {

TEST(PagedKvCacheTest, GrowsWithoutMovingAndReleasesBlocks) {
  PagedKvCache cache(2, 2, 3, 4, 5);  // 2 layers, 2 kv heads of 3, blocks of 4 positions, 5 blocks
  EXPECT_EQ(cache.blocks_for(0), 0);
  EXPECT_EQ(cache.blocks_for(4), 1);
  EXPECT_EQ(cache.blocks_for(5), 2);
  BlockTable a, b;
  ASSERT_TRUE(cache.grow(a, 3));
  ASSERT_TRUE(cache.grow(b, 6));
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(b.size(), 2u);
  EXPECT_EQ(cache.blocks_in_use(), 3);
  BlockTable a_before = a;
  ASSERT_TRUE(cache.grow(a, 8));  // a grows past b's blocks: its first block stays put
  EXPECT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0], a_before[0]);
  for (int32_t x : a) {
    for (int32_t y : b) EXPECT_NE(x, y);
  }
  EXPECT_EQ(cache.blocks_free(), 1);
  BlockTable c;
  EXPECT_FALSE(cache.grow(c, 9));  // needs 3, 1 free: refused, nothing taken
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(cache.blocks_free(), 1);
  cache.release(b);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(cache.blocks_free(), 3);
  EXPECT_TRUE(cache.grow(c, 9));
  EXPECT_EQ(cache.blocks_free(), 0);
  BlockTable stale = c;
  cache.release(c);
  EXPECT_THROW(cache.release(stale), Error);  // released twice
}

TEST(PagedKvCacheTest, WritesRowsWhereTheTableSays) {
  PagedKvCache cache(2, 2, 3, 4, 6);
  BlockTable t;
  BlockTable other;
  ASSERT_TRUE(cache.grow(other, 4));  // so t's blocks are not the first ones
  ASSERT_TRUE(cache.grow(t, 10));
  std::vector<float> k(6), v(6);
  for (int64_t pos = 0; pos < 10; ++pos) {
    for (int i = 0; i < 6; ++i) {
      k[static_cast<size_t>(i)] = static_cast<float>(pos * 10 + i);
      v[static_cast<size_t>(i)] = -static_cast<float>(pos * 10 + i);
    }
    cache.write(1, t, pos, k.data(), v.data());
  }
  EXPECT_EQ(cache.read(1, true, t, 6), (std::vector<float>{60, 61, 62, 63, 64, 65}));
  EXPECT_EQ(cache.read(1, false, t, 9)[2], -92.0f);
  // Position 6 is block t[1], row 2, in the [blocks, block_size, kv_heads, head_dim] pool.
  const float* pool = static_cast<const float*>(cache.keys(1).data());
  EXPECT_EQ(pool[(t[1] * 4 + 2) * 6 + 5], 65.0f);
  EXPECT_EQ(cache.read(0, true, t, 6), std::vector<float>(6, 0.0f));  // layer 0 untouched
  EXPECT_THROW(cache.write(1, t, 12, k.data(), v.data()), Error);     // beyond the table's 3 blocks
  EXPECT_THROW(cache.write(2, t, 0, k.data(), v.data()), Error);      // no layer 2
  EXPECT_THROW(PagedKvCache(1, 1, 1, 0, 4), Error);
}

}  // namespace
}  // namespace lumen::serve
