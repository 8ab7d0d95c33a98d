// Tests for lumen/compiler/recompute_stage.h (and buffer_lives.h beneath it):
// on a small training graph (an MLP with a GELU, its loss and gradients) the
// auto choice recomputes the GELU's intermediates for the backward pass, the
// arena shrinks, the report and stats say so, and every mode (auto, all,
// none) computes what the interpreter does; a forward-only graph is left as
// it is.
#include "lumen/compiler/recompute_stage.h"

#include <gtest/gtest.h>

#include <cmath>

#include "lumen/backend/interp/interpreter.h"
#include "lumen/compile.h"
#include "lumen/compiler/buffer_lives.h"
#include "lumen/ops/linalg.h"
#include "lumen/ops/loss.h"
#include "lumen/ops/math.h"
#include "lumen/passes/autodiff.h"

namespace lumen {
namespace {

// loss = mse(gelu(x @ w1) @ w2, target) with its gradients for w1 and w2.
struct Mlp {
  Graph g;
  std::vector<Tensor> outputs;
  std::map<std::string, Array> inputs;
  explicit Mlp(bool backward = true) {
    Tensor x = g.input("x", {Expr(33), Expr(16)});
    Tensor target = g.input("target", {Expr(33), Expr(7)});
    Tensor w1 = g.parameter("w1", {Expr(16), Expr(48)});
    Tensor w2 = g.parameter("w2", {Expr(48), Expr(7)});
    Tensor loss = ops::mse_loss(ops::matmul(ops::gelu(ops::matmul(x, w1)), w2), target);
    outputs = {loss};
    if (backward) {
      for (const Tensor& grad : passes::gradients(loss, {w1, w2})) outputs.push_back(grad);
    }
    inputs["x"] = wave({33, 16}, 0.37f, 1.5f);
    inputs["target"] = wave({33, 7}, 0.91f, 1.0f);
    inputs["w1"] = wave({16, 48}, 0.53f, 0.6f);
    inputs["w2"] = wave({48, 7}, 0.29f, 0.4f);
  }
  static Array wave(std::vector<int64_t> shape, float step, float scale) {
    std::vector<float> v(static_cast<size_t>(shape[0] * shape[1]));
    for (size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(step * static_cast<float>(i) + 0.1f);
    return Array::from_floats(v, shape);
  }
};

Program compiled(const Mlp& m, CompileOptions::Recompute mode) {
  CompileOptions o;
  o.tuning_cache = false;
  o.recompute = mode;
  Program p = compile(m.g, m.outputs, o);
  for (const auto& [name, a] : m.inputs) p.set(name, a);
  p.run();
  return p;
}

void expect_like_interpreter(const Mlp& m, Program& p, const char* mode) {
  std::vector<Edge> edges;
  for (const Tensor& t : m.outputs) edges.push_back(t.edge());
  std::vector<Array> want = interp::Interpreter(m.g).run(m.inputs, edges);
  for (size_t o = 0; o < want.size(); ++o) {
    const Array& got = p.get(p.output_names()[o]);
    ASSERT_EQ(got.numel(), want[o].numel());
    for (int64_t i = 0; i < got.numel(); ++i) {
      EXPECT_NEAR(got.get(i), want[o].get(i), 1e-5 * (1 + std::abs(want[o].get(i))))
          << mode << " output " << o << " at " << i;
    }
  }
}

TEST(RecomputeStage, AutoRecomputesTheGeluForTheBackwardAndTheArenaShrinks) {
  Mlp m;
  Program kept = compiled(m, CompileOptions::Recompute::None);
  Program chosen = compiled(m, CompileOptions::Recompute::Auto);
  auto k = kept.stats(), c = chosen.stats();
  EXPECT_EQ(k.at("recomputed_values"), 0);
  EXPECT_EQ(kept.report().find("recompute ("), std::string::npos);
  EXPECT_GT(c.at("recomputed_values"), 0);
  EXPECT_LT(c.at("foreseen_peak_bytes"), c.at("foreseen_peak_bytes_kept"));
  EXPECT_EQ(c.at("foreseen_peak_bytes_kept"), k.at("foreseen_peak_bytes"));  // the same graph, foreseen the same
  EXPECT_LT(c.at("arena_bytes"), k.at("arena_bytes"));
  std::string report = chosen.report();
  EXPECT_NE(report.find("recompute (auto): "), std::string::npos) << report;
  EXPECT_NE(report.find("values computed again after it"), std::string::npos) << report;
  expect_like_interpreter(m, kept, "none");
  expect_like_interpreter(m, chosen, "auto");
}

TEST(RecomputeStage, AllRecomputesAtLeastAsMuchAndStillMatches) {
  Mlp m;
  Program all = compiled(m, CompileOptions::Recompute::All);
  Program chosen = compiled(m, CompileOptions::Recompute::Auto);
  EXPECT_GE(all.stats().at("recomputed_values"), chosen.stats().at("recomputed_values"));
  EXPECT_NE(all.report().find("recompute (all): "), std::string::npos);
  expect_like_interpreter(m, all, "all");
}

TEST(RecomputeStage, AForwardOnlyGraphIsLeftAlone) {
  Mlp m(false);
  Program p = compiled(m, CompileOptions::Recompute::Auto);
  EXPECT_EQ(p.stats().at("recomputed_values"), 0);
  EXPECT_EQ(p.report().find("recompute ("), std::string::npos) << p.report();
  expect_like_interpreter(m, p, "forward");
}

TEST(RecomputeStage, ModesHaveNames) {
  EXPECT_EQ(recompute_named("auto"), CompileOptions::Recompute::Auto);
  EXPECT_EQ(recompute_named("all"), CompileOptions::Recompute::All);
  EXPECT_EQ(recompute_named("none"), CompileOptions::Recompute::None);
  EXPECT_THROW(recompute_named("some"), Error);
  EXPECT_STREQ(compiler::recompute_mode_name(compiler::RecomputeOptions::Mode::All), "all");
}

// buffer_lives: a buffer lives from its kernel to its last reader; inputs
// and outputs are not in the arena.
TEST(BufferLives, ABufferLivesFromItsKernelToItsLastReader) {
  Graph g;
  Tensor x = g.input("x", {Expr(8), Expr(16)});
  Tensor w = g.parameter("w", {Expr(16), Expr(16)});
  Tensor h = ops::matmul(x, w);  // a contraction read twice: its own buffer
  Tensor y = ops::matmul(h, w) + h.sum(1, true);
  compiler::Pipeline p;
  p.graph = std::make_shared<Graph>(g);
  p.outputs = {y.edge()};
  compiler::RecomputeOptions none;
  none.mode = compiler::RecomputeOptions::Mode::None;
  compiler::partition_with_recompute(p, none, {});
  compiler::BufferLives lives = compiler::buffer_lives(p, {});
  auto hn = static_cast<size_t>(h.node_id());
  ASSERT_GE(lives.place[hn], 0);
  EXPECT_EQ(lives.bytes[hn], 8 * 16 * 4);
  EXPECT_EQ(lives.first[hn], lives.place[hn]);
  ASSERT_FALSE(lives.readers[hn].empty());
  EXPECT_EQ(lives.last[hn], lives.readers[hn].back());
  EXPECT_GT(lives.last[hn], lives.first[hn]);
  EXPECT_EQ(lives.bytes[static_cast<size_t>(x.node_id())], 0);  // an input
  EXPECT_EQ(lives.bytes[static_cast<size_t>(y.node_id())], 0);  // an output
  std::vector<int64_t> live = compiler::live_bytes(lives, lives.first, lives.last);
  ASSERT_EQ(live.size(), lives.order.size());
  EXPECT_GE(live[static_cast<size_t>(lives.first[hn])], 8 * 16 * 4);
}

}  // namespace
}  // namespace lumen
