// PagedKvCache — keys and values of many sequences in one pool of
// fixed-size blocks (vLLM's paged attention layout). Per layer, keys and
// values are each an Array [blocks, block_size, kv_heads, head_dim]; a
// sequence owns a block table (its block ids in order), so position p of the
// sequence lives in block table[p / block_size], row p % block_size. Growing
// a sequence takes free blocks; releasing it returns them. Nothing is ever
// copied or moved: the compiled step programs read the pool through the
// block tables (a Gather), and the engine writes each new row in place.
//
// Not thread-safe: the engine's worker owns it (metrics read the counts
// through the engine's lock).
#pragma once

#include <cstdint>
#include <vector>

#include "lumen/core/array.h"

namespace lumen::serve {

using BlockTable = std::vector<int32_t>;

class PagedKvCache {
 public:
  PagedKvCache(int64_t layers, int64_t kv_heads, int64_t head_dim, int64_t block_size, int64_t blocks);

  // Blocks needed to hold `positions` rows.
  int64_t blocks_for(int64_t positions) const { return (positions + block_size_ - 1) / block_size_; }
  // Extends `table` to hold `positions` rows. False, and `table` unchanged,
  // when too few blocks are free.
  bool grow(BlockTable& table, int64_t positions);
  // Returns every block of `table` to the pool and empties it.
  void release(BlockTable& table);

  // Writes one position's keys and values (kv_heads · head_dim floats each,
  // heads outermost) for `layer`; the table must already hold the position.
  void write(int64_t layer, const BlockTable& table, int64_t position, const float* keys, const float* values);
  // The stored row, for tests: kv_heads · head_dim floats.
  std::vector<float> read(int64_t layer, bool keys, const BlockTable& table, int64_t position) const;

  // The pools the step programs read: [blocks, block_size, kv_heads, head_dim] f32.
  const Array& keys(int64_t layer) const { return keys_[static_cast<size_t>(layer)]; }
  const Array& values(int64_t layer) const { return values_[static_cast<size_t>(layer)]; }

  int64_t block_size() const { return block_size_; }
  int64_t blocks_total() const { return static_cast<int64_t>(owned_.size()); }
  int64_t blocks_free() const { return static_cast<int64_t>(free_.size()); }
  int64_t blocks_in_use() const { return blocks_total() - blocks_free(); }
  int64_t row_floats() const { return kv_heads_ * head_dim_; }

 private:
  // Float offset of (layer, position) in a pool; throws when the table does not hold it.
  int64_t offset(int64_t layer, const BlockTable& table, int64_t position) const;

  int64_t layers_, kv_heads_, head_dim_, block_size_;
  std::vector<Array> keys_, values_;
  std::vector<int32_t> free_;  // a stack: the most recently freed block is reused first
  std::vector<bool> owned_;    // owned_[b]: block b belongs to some table (catches a double release)
};

}  // namespace lumen::serve
