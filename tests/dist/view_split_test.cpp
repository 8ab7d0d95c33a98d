// dist/view_split: which views keep a split, and the local view reads exactly
// the chunk the global view reads (checked element by element).
#include <gtest/gtest.h>

#include <functional>

#include "lumen/core/simplify.h"
#include "lumen/dist/view_split.h"

using namespace lumen;
using namespace lumen::dist;

namespace {

std::vector<int64_t> concrete(const Shape& s) {
  std::vector<int64_t> out;
  for (const Expr& d : s) out.push_back(d.value());
  return out;
}

void each_index(const std::vector<int64_t>& shape, const std::function<void(const std::vector<int64_t>&)>& f) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int64_t> idx(shape.size());
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rest = flat;
    for (size_t d = shape.size(); d-- > 0;) {
      idx[d] = rest % shape[d];
      rest /= shape[d];
    }
    f(idx);
  }
}

// Value read through `view` at `idx` from a buffer holding value(flat) = flat + 1; 0 where invalid.
int64_t read(const View& view, const std::vector<int64_t>& idx, const std::function<int64_t(int64_t)>& buffer) {
  std::vector<Expr> e;
  for (int64_t i : idx) e.emplace_back(i);
  View::Index ix = view.index(e);
  Expr valid = simplify(ix.valid), flat = simplify(ix.index);
  EXPECT_TRUE(valid.is_const() && flat.is_const()) << view.to_string();
  return valid.value() ? buffer(flat.value()) : 0;
}

// Every rank's local view over its chunk reads what the global view reads in that rank's chunk.
void expect_local_reads_match(const View& global, int axis, int parts, const Bindings& dims = {}) {
  auto s = split_through(global, axis, parts);
  ASSERT_TRUE(s.has_value()) << global.to_string();
  View g = global.bind(dims), l = s->local.bind(dims);
  std::vector<int64_t> base = concrete(g.base_shape());
  std::vector<int64_t> local_base = base;
  local_base[static_cast<size_t>(axis)] /= parts;
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < base.size(); ++d) inner *= base[d];
  int64_t chunk = local_base[static_cast<size_t>(axis)];
  for (int r = 0; r < parts; ++r) {
    // local flat -> global flat: same outer block and inner offset, axis shifted by r * chunk
    auto local_buffer = [&](int64_t flat) {
      int64_t in = flat % inner, rest = flat / inner;
      int64_t a = rest % chunk, outer = rest / chunk;
      return (outer * base[static_cast<size_t>(axis)] + a + r * chunk) * inner + in + 1;
    };
    std::vector<int64_t> local_shape = concrete(l.shape());
    int64_t width = local_shape[static_cast<size_t>(s->axis)];
    each_index(local_shape, [&](const std::vector<int64_t>& idx) {
      std::vector<int64_t> global_idx = idx;
      global_idx[static_cast<size_t>(s->axis)] += r * width;
      EXPECT_EQ(read(l, idx, local_buffer), read(g, global_idx, [](int64_t f) { return f + 1; }))
          << "rank " << r << " view " << global.to_string();
    });
  }
  for (const Expr& c : s->conditions) EXPECT_NE(evaluate(c, dims), 0) << to_string(c);
}

}  // namespace

TEST(ViewSplit, PermuteAndMergeHeads) {  // attention output [b, H, s, hd] -> [b, s, H*hd]
  View v = View::contiguous({2, 4, 3, 5}).permute({0, 2, 1, 3}).reshape({2, 3, 20});
  auto s = split_through(v, 1, 2);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->axis, 2);
  EXPECT_EQ(to_string(s->local.shape()), "[2, 3, 10]");
  expect_local_reads_match(v, 1, 2);
}

TEST(ViewSplit, SplitHeadsFromProjection) {  // [b, s, H*hd] split on the last axis -> [b, H, s, hd]
  View v = View::contiguous({2, 3, 12}).reshape({2, 3, 4, 3}).permute({0, 2, 1, 3});
  auto s = split_through(v, 2, 2);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->axis, 1);
  expect_local_reads_match(v, 2, 2);
  EXPECT_FALSE(split_through(v, 2, 3)) << "4 heads do not split in 3";
  expect_local_reads_match(View::contiguous({2, 3, 12}).reshape({2, 3, 6, 2}), 2, 3);
}

TEST(ViewSplit, MatmulOperandViews) {  // weight [out, in] split on out, read as [1, s, out, in]
  View w = View::contiguous({6, 4}).reshape({1, 6, 4}).expand({3, 6, 4});
  expect_local_reads_match(w, 0, 2);
  View wt = View::contiguous({6, 4}).permute({1, 0}).reshape({4, 1, 6}).expand({4, 5, 6});  // transposed, broadcast
  expect_local_reads_match(wt, 0, 3);
}

TEST(ViewSplit, RefusesWhatDoesNotKeepTheSplit) {
  View base = View::contiguous({4, 6});
  EXPECT_FALSE(split_through(base.slice(0, 1, 3), 0, 2)) << "a slice of the split axis";
  EXPECT_FALSE(split_through(base.reshape({24}), 1, 2)) << "the split axis as the inner part of a merged dim";
  EXPECT_FALSE(split_through(base.flip(0), 0, 2)) << "reversed";
  EXPECT_FALSE(split_through(base.slice(0, 0, 1).expand({1, 6}), 0, 2)) << "one row of the split axis";
  expect_local_reads_match(base.reshape({24}), 0, 2);  // merged as the outer part: fine
  expect_local_reads_match(base.slice(1, 1, 5).pad({{0, 0}, {2, 1}}), 0, 2);  // other axes sliced and padded
  expect_local_reads_match(base.flip(1), 0, 2);
}

TEST(ViewSplit, GroupedQueryHeadsThroughTwoLayers) {  // kv heads [1, 2, 5, 4] repeated 3 times -> [1, 6, 5, 4]
  View v = View::contiguous({1, 2, 5, 4}).reshape({1, 2, 1, 5, 4}).expand({1, 2, 3, 5, 4}).reshape({1, 6, 5, 4});
  ASSERT_GT(v.layers().size(), 1u);
  auto s = split_through(v, 1, 2);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->axis, 1);
  expect_local_reads_match(v, 1, 2);
}

TEST(ViewSplit, DynamicCacheSliceKeepsHeadSplit) {  // k_cache [1, kv, cap, hd] read as [:, :, 0:past, :]
  Expr past = Expr::symbol("past");
  View v = View::contiguous({1, 4, 16, 3}).slice(2, Expr(0), past);
  auto s = split_through(v, 1, 2);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->axis, 1);
  expect_local_reads_match(v, 1, 2, {{"past", 7}});
  // The new rows written at past .. past+seq, and the concatenation's padded reads.
  Expr seq = Expr::symbol("seq");
  View w = View::contiguous({1, 4, 16, 3}).slice(2, past, simplify(past + seq));
  expect_local_reads_match(w, 1, 2, {{"past", 5}, {"seq", 3}});
  View padded = View::contiguous({1, 4, 3, 3}).pad({{0, 0}, {0, 0}, {5, 0}, {0, 0}});
  expect_local_reads_match(padded, 1, 2);
}

TEST(ViewSplit, BatchSplitWithDynamicSequence) {  // data parallel: [B, seq, dim] split on B
  Expr seq = Expr::symbol("seq");
  View v = View::contiguous({4, seq, 6}).reshape({4, seq, 2, 3}).permute({0, 2, 1, 3});
  auto s = split_through(v, 0, 2);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->axis, 0);
  expect_local_reads_match(v, 0, 2, {{"seq", 5}});
}
