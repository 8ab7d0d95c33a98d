// Attention over a paged KV cache (paged_kv_cache.h), composed from lumen
// ops so the compiler fuses and searches it like any other attention: the
// cached keys and values of each row are a Gather of its blocks from the
// pool through its block table, this step's keys and values are appended,
// and a mask built from each row's cached length hides padding blocks,
// positions past the row's length and (causally) later new tokens.
#pragma once

#include <cstdint>

#include "lumen/core/tensor.h"

namespace lumen::serve {

// q [batch, heads, seq, head_dim]; k, v [batch, kv_heads, seq, head_dim]:
// the step's new tokens, which sit at positions lengths[b] .. lengths[b]+seq-1.
// pools [blocks, block_size, kv_heads, head_dim]; block_table [batch,
// table_blocks] (i32; entries past a row's length may name any block);
// lengths [batch] (i32): positions already cached per row. A key at
// position j is seen from the query at position i iff j <= i, and, with a
// sliding window w > 0, j > i - w. Returns [batch, heads, seq, head_dim].
Tensor paged_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_pool, const Tensor& value_pool,
                       const Tensor& block_table, const Tensor& lengths, int64_t sliding_window = 0);

}  // namespace lumen::serve
