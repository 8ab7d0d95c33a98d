#include "lumen/serve/paged_kv_cache.h"

#include <cstring>

#include "lumen/core/error.h"

namespace lumen::serve {

PagedKvCache::PagedKvCache(int64_t layers, int64_t kv_heads, int64_t head_dim, int64_t block_size, int64_t blocks)
    : layers_(layers), kv_heads_(kv_heads), head_dim_(head_dim), block_size_(block_size) {
  if (layers < 1 || kv_heads < 1 || head_dim < 1) {
    fail("paged KV cache: layers (", layers, "), kv_heads (", kv_heads, ") and head_dim (", head_dim, ") must be positive");
  }
  if (block_size < 1 || block_size > 4096) fail("paged KV cache: the block size is ", block_size, "; it must be 1..4096");
  if (blocks < 1 || blocks > (int64_t{1} << 30)) fail("paged KV cache: the block count is ", blocks, "; it must be 1..2^30");
  std::vector<int64_t> shape{blocks, block_size, kv_heads, head_dim};
  for (int64_t l = 0; l < layers; ++l) {
    keys_.emplace_back(DType::F32, shape);
    values_.emplace_back(DType::F32, shape);
  }
  owned_.assign(static_cast<size_t>(blocks), false);
  for (int64_t b = blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

bool PagedKvCache::grow(BlockTable& table, int64_t positions) {
  int64_t need = blocks_for(positions) - static_cast<int64_t>(table.size());
  if (need <= 0) return true;
  if (need > blocks_free()) return false;
  for (int64_t i = 0; i < need; ++i) {
    int32_t b = free_.back();
    free_.pop_back();
    owned_[static_cast<size_t>(b)] = true;
    table.push_back(b);
  }
  return true;
}

void PagedKvCache::release(BlockTable& table) {
  for (int32_t b : table) {
    if (b < 0 || b >= blocks_total() || !owned_[static_cast<size_t>(b)]) {
      fail("paged KV cache: block ", b, " is released but not in use (a block table was released twice)");
    }
    owned_[static_cast<size_t>(b)] = false;
    free_.push_back(b);
  }
  table.clear();
}

int64_t PagedKvCache::offset(int64_t layer, const BlockTable& table, int64_t position) const {
  if (layer < 0 || layer >= layers_) fail("paged KV cache: layer ", layer, " is outside 0..", layers_ - 1);
  int64_t slot = position / block_size_;
  if (position < 0 || slot >= static_cast<int64_t>(table.size())) {
    fail("paged KV cache: position ", position, " is outside the sequence's ", table.size(), " blocks of ", block_size_);
  }
  int64_t block = table[static_cast<size_t>(slot)];
  return (block * block_size_ + position % block_size_) * row_floats();
}

void PagedKvCache::write(int64_t layer, const BlockTable& table, int64_t position, const float* keys, const float* values) {
  int64_t at = offset(layer, table, position);
  size_t bytes = static_cast<size_t>(row_floats()) * sizeof(float);
  std::memcpy(static_cast<float*>(keys_[static_cast<size_t>(layer)].data()) + at, keys, bytes);
  std::memcpy(static_cast<float*>(values_[static_cast<size_t>(layer)].data()) + at, values, bytes);
}

std::vector<float> PagedKvCache::read(int64_t layer, bool keys, const BlockTable& table, int64_t position) const {
  int64_t at = offset(layer, table, position);
  const float* base = static_cast<const float*>((keys ? keys_ : values_)[static_cast<size_t>(layer)].data()) + at;
  return std::vector<float>(base, base + row_floats());
}

}  // namespace lumen::serve
