// Persistent state: a KV-cache-like buffer appended to across runs, reads
// that see the state from before the run, and the errors assign() raises.
#include <gtest/gtest.h>

#include "lumen/compile.h"
#include "lumen/core/tensor.h"

namespace lumen {
namespace {

class StateTest : public ::testing::TestWithParam<Backend> {};

CompileOptions options_for(Backend b) {
  CompileOptions o;
  o.backend = b;
  o.tuning_cache = false;
  return o;
}

// cache[past : past+seq] = 2 * x;  out = column sums of cache[0 : past] (before the write).
TEST_P(StateTest, AppendsAcrossRunsAndReadsTheOldState) {
  Graph g;
  Expr past = g.dim("past"), seq = g.dim("seq");
  Tensor cache = g.state("cache", {Expr(8), Expr(3)});
  Tensor x = g.input("x", {seq, Expr(3)});
  g.assign(cache.slice(0, past, past + seq), x * x.scalar(2));
  Tensor old = cache.slice(0, Expr(0), past).sum(0);
  g.mark_output(old, "old");
  Program p = compile(g, {}, options_for(GetParam()));

  std::vector<float> expected_cache(24, 0);
  int64_t at = 0;
  for (int64_t step : {3, 1, 2}) {
    std::vector<float> xs;
    for (int64_t i = 0; i < step * 3; ++i) xs.push_back(static_cast<float>(at * 3 + i + 1));
    p.set("x", Array::from_floats(xs, {step, 3}));
    p.bind("past", at);
    p.run();
    for (int c = 0; c < 3; ++c) {
      float sum = 0;
      for (int64_t r = 0; r < at; ++r) sum += expected_cache[static_cast<size_t>(r * 3 + c)];
      EXPECT_FLOAT_EQ(p.get("old").get(c), sum) << "step of " << step << " at " << at;
    }
    for (size_t i = 0; i < xs.size(); ++i) expected_cache[static_cast<size_t>(at * 3) + i] = 2 * xs[i];
    at += step;
    EXPECT_EQ(p.state("cache").to_floats(), expected_cache);
  }

  p.reset_state();
  EXPECT_EQ(p.state("cache").to_floats(), std::vector<float>(24, 0));
  // Writing past the capacity is a clear error, not a buffer overrun.
  p.set("x", Array::from_floats(std::vector<float>(9, 1), {3, 3}));
  p.bind("past", 6);
  EXPECT_THROW(p.run(), Error);
}

// A region updated from itself: every run adds one; a shift copies state into state.
TEST_P(StateTest, UpdatesFromTheStateItself) {
  Graph g;
  Tensor s = g.state("s", {Expr(4)});
  g.assign(s.slice(0, Expr(0), Expr(2)), s.slice(0, Expr(0), Expr(2)) + s.scalar(1));
  g.assign(s.slice(0, Expr(2), Expr(4)), s.slice(0, Expr(1), Expr(3)));  // reads s[1] from before the run
  g.mark_output(s.sum(0), "total");
  Program p = compile(g, {}, options_for(GetParam()));
  p.set("s", {10, 20, 30, 40});
  p.run();
  EXPECT_FLOAT_EQ(p.get("total").get(0), 100);
  EXPECT_EQ(p.state("s").to_floats(), (std::vector<float>{11, 21, 20, 30}));
  p.run();
  EXPECT_EQ(p.state("s").to_floats(), (std::vector<float>{12, 22, 21, 20}));
}

// A permuted, strided target: the state is [heads, capacity, dim]; the value is [seq, heads, dim].
TEST_P(StateTest, WritesThroughAPermutedView) {
  Graph g;
  Expr past = g.dim("past");
  Tensor cache = g.state("kv", {Expr(2), Expr(5), Expr(3)});
  Tensor v = g.input("v", {Expr(2), Expr(2), Expr(3)});
  g.assign(cache.slice(1, past, past + 2).permute({1, 0, 2}), v);
  Program p = compile(g, {}, options_for(GetParam()));
  std::vector<float> vs(12);
  for (size_t i = 0; i < vs.size(); ++i) vs[i] = static_cast<float>(i + 1);
  p.set("v", Array::from_floats(vs, {2, 2, 3}));
  p.bind("past", 1);
  p.run();
  const Array& kv = p.state("kv");
  for (int s = 0; s < 2; ++s) {
    for (int h = 0; h < 2; ++h) {
      for (int d = 0; d < 3; ++d) {
        EXPECT_EQ(kv.get((h * 5 + 1 + s) * 3 + d), vs[static_cast<size_t>((s * 2 + h) * 3 + d)]);
      }
    }
  }
  EXPECT_EQ(kv.get(0), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, StateTest, ::testing::Values(Backend::Interp, Backend::Cpu),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

TEST(StateErrors, AssignChecksItsTarget) {
  Graph g;
  Tensor s = g.state("s", {Expr(4), Expr(2)});
  Tensor x = g.input("x", {Expr(4), Expr(2)});
  EXPECT_THROW(g.assign(x, x), Error);                                              // not a state
  EXPECT_THROW(g.assign(s.slice(0, Expr(0), Expr(1)).expand({Expr(4), Expr(2)}), x), Error);  // broadcast
  EXPECT_THROW(g.assign(s, x.cast(DType::I32)), Error);                            // dtype
  EXPECT_THROW(g.assign(s.slice(0, Expr(0), Expr(3)), x), Error);                  // shape
  EXPECT_THROW(g.assign(s.pad({{Expr(1), Expr(0)}, {Expr(0), Expr(0)}}).slice(0, Expr(0), Expr(4)), x), Error);  // padding
  EXPECT_THROW(g.state("d", {g.dim("n")}), Error);                                 // dynamic shape
  try {
    g.assign(s.slice(0, Expr(0), Expr(3)), x);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[3, 2]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4, 2]"), std::string::npos) << e.what();
  }
  g.assign(s, x);  // the whole state is a fine target
  EXPECT_EQ(g.updates().size(), 1u);
}

TEST(StateErrors, UnknownStateName) {
  Graph g;
  Tensor s = g.state("s", {Expr(2)});
  g.mark_output(s + s, "y");
  Program p = compile(g, {}, options_for(Backend::Interp));
  EXPECT_THROW(p.state("nope"), Error);
  EXPECT_THROW(p.set("s", Array::from_floats({1, 2, 3}, {3})), Error);
}

}  // namespace
}  // namespace lumen
