#include "lumen/serve/paged_attention.h"

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/ops/attention.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/indexing.h"
#include "lumen/ops/movement.h"

namespace lumen::serve {

namespace {

// The cached rows of every sequence: [batch, kv_heads, table_blocks · block_size, head_dim].
Tensor gather_blocks(const Tensor& pool, const Tensor& block_table) {
  const Expr& batch = block_table.shape()[0];
  const Expr& blocks = block_table.shape()[1];
  Tensor rows = ops::index_select(pool, 0, block_table.reshape({simplify(batch * blocks)}));
  const Shape& p = pool.shape();
  return rows.reshape({batch, simplify(blocks * p[1]), p[2], p[3]}).permute({0, 2, 1, 3});
}

// [batch, 1, seq, cached + seq] (bool): which keys each query sees.
Tensor visibility(const Tensor& lengths, const Expr& cached, const Expr& seq, int64_t window) {
  Graph& g = *lengths.graph();
  const Expr& batch = lengths.shape()[0];
  Shape keys{Expr(1), Expr(1), Expr(1), simplify(cached + seq)};
  Shape queries{Expr(1), Expr(1), seq, Expr(1)};
  Tensor length = lengths.reshape({batch, Expr(1), Expr(1), Expr(1)});
  Expr j = loop_index(keys, 3);
  Tensor is_cached = g.iota(lt(j, cached), keys, DType::Bool);
  // Key j: a cached row at position j (real when j < length), or new token j - cached at length + (j - cached).
  Tensor cached_pos = g.iota(j, keys, DType::I32);
  Tensor new_pos = length + g.iota(simplify(j - cached), keys, DType::I32);
  Tensor key_pos = ops::where(is_cached, cached_pos, new_pos);
  Tensor real = ops::logical_or(ops::lt(cached_pos, length), ops::logical_not(is_cached));
  Tensor query_pos = length + g.iota(loop_index(queries, 2), queries, DType::I32);
  Tensor visible = ops::logical_and(real, ops::le(key_pos, query_pos));
  if (window > 0) visible = ops::logical_and(visible, ops::gt(key_pos, query_pos - static_cast<double>(window)));
  return visible;
}

}  // namespace

Tensor paged_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_pool, const Tensor& value_pool,
                       const Tensor& block_table, const Tensor& lengths, int64_t sliding_window) {
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) {
    fail("paged_attention: q, k, v must be [batch, heads, seq, head_dim]; got ", to_string(q.shape()), ", ",
         to_string(k.shape()), ", ", to_string(v.shape()));
  }
  if (key_pool.rank() != 4 || value_pool.shape() != key_pool.shape()) {
    fail("paged_attention: the pools must be [blocks, block_size, kv_heads, head_dim] alike; got ", to_string(key_pool.shape()),
         " and ", to_string(value_pool.shape()));
  }
  if (block_table.rank() != 2 || block_table.dtype() != DType::I32 || lengths.rank() != 1 || lengths.dtype() != DType::I32) {
    fail("paged_attention: block_table must be [batch, blocks] i32 and lengths [batch] i32; got ", dtype_name(block_table.dtype()),
         " ", to_string(block_table.shape()), " and ", dtype_name(lengths.dtype()), " ", to_string(lengths.shape()));
  }
  if (simplify(key_pool.shape()[2]) != simplify(k.shape()[1]) || simplify(key_pool.shape()[3]) != simplify(k.shape()[3])) {
    fail("paged_attention: the pools hold ", to_string(key_pool.shape()), " but the new keys are ", to_string(k.shape()));
  }
  Tensor keys = ops::concat({gather_blocks(key_pool, block_table), k}, 2);
  Tensor values = ops::concat({gather_blocks(value_pool, block_table), v}, 2);
  Expr cached = simplify(block_table.shape()[1] * key_pool.shape()[1]);
  Tensor mask = visibility(lengths, cached, q.shape()[2], sliding_window);
  bool grouped = simplify(q.shape()[1]) != simplify(k.shape()[1]);
  return ops::scaled_dot_product_attention(q, keys, values, mask, false, std::nullopt, grouped);
}

}  // namespace lumen::serve
