// Tests for lumen/core/view.h: random chains of movement ops are checked
// element by element against an explicit index table built by brute force.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "lumen/core/error.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/simplify.h"
#include "lumen/core/view.h"

namespace lumen {
namespace {

// The reference: every logical element holds the buffer position it reads,
// or -1 for padding.
struct IndexTable {
  std::vector<int64_t> shape;
  std::vector<int64_t> values;

  static IndexTable iota(const std::vector<int64_t>& shape) {
    IndexTable t{shape, {}};
    t.values.resize(static_cast<size_t>(t.numel()));
    std::iota(t.values.begin(), t.values.end(), 0);
    return t;
  }
  int64_t numel() const { return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()); }
  std::vector<int64_t> strides() const {
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
    return s;
  }
  std::vector<int64_t> unravel(int64_t flat) const {
    std::vector<int64_t> idx(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
      idx[d] = flat % shape[d];
      flat /= shape[d];
    }
    return idx;
  }
  // Builds a table of `new_shape` where each element is produced by `source(idx)`.
  template <typename F>
  IndexTable remap(std::vector<int64_t> new_shape, F source) const {
    IndexTable out{std::move(new_shape), {}};
    out.values.resize(static_cast<size_t>(out.numel()));
    auto s = strides();
    for (int64_t f = 0; f < out.numel(); ++f) {
      std::vector<int64_t> idx = out.unravel(f);
      std::vector<int64_t> src;
      if (!source(idx, src)) {
        out.values[static_cast<size_t>(f)] = -1;
        continue;
      }
      int64_t pos = 0;
      for (size_t d = 0; d < src.size(); ++d) pos += src[d] * s[d];
      out.values[static_cast<size_t>(f)] = values[static_cast<size_t>(pos)];
    }
    return out;
  }
};

Shape to_shape(const std::vector<int64_t>& dims) { return Shape(dims.begin(), dims.end()); }

void expect_same(const View& view, const IndexTable& table, const std::string& history) {
  ASSERT_EQ(view.rank(), table.shape.size()) << history;
  for (size_t d = 0; d < view.rank(); ++d) ASSERT_EQ(view.shape()[d], Expr(table.shape[d])) << history;
  View::Index index = view.index();
  // The index with masked coordinates clamped into their masks: the same where valid, and
  // inside the source buffer everywhere (when anything is valid: an empty mask has nothing to
  // clamp into, and lowering reads nothing through such a view).
  Expr clamped = view.clamped_index(loop_indices(view.shape()));
  int64_t source = 1;
  for (const Expr& d : view.base_shape()) source *= d.value();
  if (std::none_of(table.values.begin(), table.values.end(), [](int64_t v) { return v >= 0; })) source = 0;
  for (int64_t f = 0; f < table.numel(); ++f) {
    std::vector<int64_t> idx = table.unravel(f);
    Bindings b;
    for (size_t d = 0; d < idx.size(); ++d) b["i" + std::to_string(d)] = idx[d];
    int64_t want = table.values[static_cast<size_t>(f)];
    bool valid = evaluate(index.valid, b) != 0;
    ASSERT_EQ(valid, want >= 0) << history << "\nelement " << f << " valid=" << index.valid;
    int64_t inside = evaluate(clamped, b);
    if (valid) {
      ASSERT_EQ(evaluate(index.index, b), want) << history << "\nelement " << f << " index=" << index.index;
      ASSERT_EQ(inside, want) << history << "\nelement " << f << " clamped index=" << clamped;
    } else if (source > 0) {
      ASSERT_TRUE(inside >= 0 && inside < source) << history << "\nelement " << f << " clamped index=" << clamped;
    }
  }
}

struct ChainFuzzer {
  std::mt19937 rng{7};
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

  std::vector<int64_t> random_factorisation(int64_t n) {
    std::vector<int64_t> dims;
    int rank = uniform(1, 4);
    for (int d = 0; d + 1 < rank; ++d) {
      std::vector<int64_t> divisors;
      for (int64_t k = 1; k <= n; ++k)
        if (n % k == 0) divisors.push_back(k);
      int64_t k = divisors[static_cast<size_t>(uniform(0, static_cast<int>(divisors.size()) - 1))];
      dims.push_back(k);
      n /= k;
    }
    dims.push_back(n);
    return dims;
  }

  // Applies one random movement op to both the view and the table.
  std::string step(View& view, IndexTable& table) {
    size_t rank = table.shape.size();
    int dim = uniform(0, static_cast<int>(rank) - 1);
    auto d = static_cast<size_t>(dim);
    switch (uniform(0, 6)) {
      case 0: {  // permute
        std::vector<int> order(rank);
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<int64_t> shape(rank);
        for (size_t k = 0; k < rank; ++k) shape[k] = table.shape[static_cast<size_t>(order[k])];
        table = table.remap(shape, [&](const std::vector<int64_t>& idx, std::vector<int64_t>& src) {
          src.assign(rank, 0);
          for (size_t k = 0; k < rank; ++k) src[static_cast<size_t>(order[k])] = idx[k];
          return true;
        });
        view = view.permute(order);
        return "permute";
      }
      case 1: {  // reshape
        std::vector<int64_t> shape = random_factorisation(table.numel());
        IndexTable old = table;
        table = table.remap(shape, [&](const std::vector<int64_t>& idx, std::vector<int64_t>& src) {
          int64_t flat = 0;
          for (size_t k = 0; k < idx.size(); ++k) flat = flat * shape[k] + idx[k];
          src = old.unravel(flat);
          return true;
        });
        view = view.reshape(to_shape(shape));
        return "reshape";
      }
      case 2: {  // expand a size-1 dim (insert one first if there is none)
        if (table.shape[d] != 1) return "skip";
        int64_t n = uniform(2, 4);
        std::vector<int64_t> shape = table.shape;
        shape[d] = n;
        table = table.remap(shape, [&](const std::vector<int64_t>& idx, std::vector<int64_t>& src) {
          src = idx;
          src[d] = 0;
          return true;
        });
        view = view.expand(to_shape(shape));
        return "expand";
      }
      case 3: {  // slice with step
        int64_t size = table.shape[d];
        int64_t begin = uniform(0, static_cast<int>(size));
        int64_t end = uniform(static_cast<int>(begin), static_cast<int>(size));
        int64_t stride = uniform(1, 3);
        std::vector<int64_t> shape = table.shape;
        shape[d] = (end - begin + stride - 1) / stride;
        if (shape[d] == 0) return "skip";
        table = table.remap(shape, [&](const std::vector<int64_t>& idx, std::vector<int64_t>& src) {
          src = idx;
          src[d] = begin + idx[d] * stride;
          return true;
        });
        view = view.slice(dim, Expr(begin), Expr(end), stride);
        return "slice";
      }
      case 4: {  // flip
        int64_t size = table.shape[d];
        table = table.remap(table.shape, [&](const std::vector<int64_t>& idx, std::vector<int64_t>& src) {
          src = idx;
          src[d] = size - 1 - idx[d];
          return true;
        });
        view = view.flip(dim);
        return "flip";
      }
      case 5: {  // unfold into windows
        if (rank >= 5) return "skip";
        int64_t n = table.shape[d];
        int64_t dilation = uniform(1, 2), size = uniform(1, 3), stride = uniform(1, 2);
        if ((size - 1) * dilation + 1 > n) return "skip";
        int64_t windows = (n - (size - 1) * dilation - 1) / stride + 1;
        std::vector<int64_t> shape = table.shape;
        shape[d] = windows;
        shape.insert(shape.begin() + dim + 1, size);
        table = table.remap(shape, [&](const std::vector<int64_t>& idx, std::vector<int64_t>& src) {
          src = idx;
          src[d] = idx[d] * stride + idx[d + 1] * dilation;
          src.erase(src.begin() + dim + 1);
          return true;
        });
        view = view.unfold(dim, size, stride, dilation);
        return "unfold";
      }
      default: {  // pad
        int64_t before = uniform(0, 2), after = uniform(0, 2);
        std::vector<int64_t> shape = table.shape;
        shape[d] += before + after;
        int64_t size = table.shape[d];
        table = table.remap(shape, [&](const std::vector<int64_t>& idx, std::vector<int64_t>& src) {
          src = idx;
          src[d] = idx[d] - before;
          return src[d] >= 0 && src[d] < size;
        });
        std::vector<std::pair<Expr, Expr>> padding(rank, {Expr(0), Expr(0)});
        padding[d] = {Expr(before), Expr(after)};
        view = view.pad(padding);
        return "pad";
      }
    }
  }
};

TEST(ViewBruteForce, RandomChainsMatchIndexTable) {
  ChainFuzzer f;
  int multi_layer = 0;
  for (int chain = 0; chain < 400; ++chain) {
    std::vector<int64_t> shape = f.random_factorisation(f.uniform(1, 4) * f.uniform(1, 6) * f.uniform(1, 3));
    IndexTable table = IndexTable::iota(shape);
    View view = View::contiguous(to_shape(shape));
    std::string history = "contiguous " + to_string(to_shape(shape));
    for (int s = 0; s < 7; ++s) {
      history += " -> " + f.step(view, table);
      expect_same(view, table, history + "\nview " + view.to_string());
      if (testing::Test::HasFatalFailure()) return;
    }
    if (view.layers().size() > 1) ++multi_layer;
  }
  EXPECT_GT(multi_layer, 20);  // the chains do exercise unmergeable reshapes
}

TEST(View, ReshapeMergesWhenStridesAllow) {
  View v = View::contiguous({Expr(4), Expr(6)}).permute({1, 0});  // [6, 4] strides [1, 6]
  EXPECT_EQ(v.reshape({Expr(6), Expr(2), Expr(2)}).layers().size(), 1u);  // split only
  EXPECT_EQ(v.reshape({Expr(24)}).layers().size(), 2u);                   // merge of permuted dims
  View e = View::contiguous({Expr(1), Expr(5)}).expand({Expr(3), Expr(5)});
  EXPECT_EQ(e.reshape({Expr(15)}).layers().size(), 2u);
  EXPECT_EQ(e.reshape({Expr(3), Expr(1), Expr(5)}).layers().size(), 1u);
}

// The classic index: a reshape of a permute of a slice. The simplifier must
// reduce it to a short expression, not leave the nested div/mod chain.
TEST(View, ClassicIndexSimplifiesToSmallExpression) {
  View v = View::contiguous({Expr(8), Expr(16), Expr(32)})
               .slice(1, Expr(2), Expr(10))  // [8, 8, 32]
               .permute({1, 0, 2})           // [8, 8, 32]
               .reshape({Expr(64), Expr(32)});
  View::Index idx = v.index();
  // i0%8*512 + i0/8*32 + i1 + 64: one term per source dim, nothing nested.
  EXPECT_LE(expr_tree_size(idx.index), 15) << idx.index;
  EXPECT_EQ(idx.valid, Expr(1));
  Bindings b{{"i0", 13}, {"i1", 5}};  // i0 = 13 -> permuted (1, 5) -> source (5, 1 + 2, 5)
  EXPECT_EQ(evaluate(idx.index, b), 5 * 512 + 3 * 32 + 5);
}

TEST(View, SymbolicDimsBindToConcreteViews) {
  Expr seq = Expr::symbol("seq");
  View sym = View::contiguous({seq, Expr(8)}).permute({1, 0}).reshape({Expr(2), Expr(4), seq}).slice(2, Expr(1), seq);
  View concrete = View::contiguous({Expr(5), Expr(8)}).permute({1, 0}).reshape({Expr(2), Expr(4), Expr(5)}).slice(
      2, Expr(1), Expr(5));
  View bound = sym.bind({{"seq", 5}});
  EXPECT_EQ(bound.shape(), concrete.shape());
  View::Index a = bound.index(), b = concrete.index();
  for (int64_t i = 0; i < 2 * 4 * 4; ++i) {
    Bindings at{{"i0", i / 16}, {"i1", (i / 4) % 4}, {"i2", i % 4}};
    EXPECT_EQ(evaluate(a.index, at), evaluate(b.index, at));
  }
}

TEST(View, ErrorsNameTheOpAndShapes) {
  View v = View::contiguous({Expr(3), Expr(4)});
  try {
    v.reshape({Expr(5), Expr(2)});
    FAIL() << "reshape to a different element count must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[3, 4]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[5, 2]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(v.permute({0, 0}), Error);
  EXPECT_THROW(v.expand({Expr(3), Expr(5)}), Error);
  EXPECT_THROW(v.slice(1, Expr(2), Expr(5)), Error);
  EXPECT_THROW(v.slice(2, Expr(0), Expr(1)), Error);
  EXPECT_THROW(v.pad({{Expr(-1), Expr(0)}, {Expr(0), Expr(0)}}), Error);
}

}  // namespace
}  // namespace lumen
