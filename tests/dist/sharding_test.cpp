// Sharding propagation, local graphs, segments, placement and the cost model
// on one process (no communication): the communication a plan needs, where
// the graph is cut, and the errors bad plans get.
#include <gtest/gtest.h>

#include "lumen/core/error.h"
#include "lumen/dist/cost_model.h"
#include "lumen/dist/local_graph.h"
#include "lumen/dist/model_plans.h"
#include "lumen/dist/plan_search.h"
#include "lumen/dist/segments.h"
#include "lumen/ops/math.h"
#include "lumen/ops/reduce.h"
#include "lumen/passes/autodiff.h"

using namespace lumen;
using namespace lumen::dist;

namespace {

int count(const ShardedGraph& s, CommKind kind) {
  int n = 0;
  for (const CommPoint& c : s.comms) n += c.kind == kind ? 1 : 0;
  return n;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// x [4, 8] -> relu(x w1^T + b1) w2^T + b2: column- then row-parallel.
struct Mlp {
  Graph g;
  Tensor out;
  Mlp() {
    Tensor x = g.input("x", {Expr(4), Expr(8)});
    Tensor w1 = g.parameter("w1", {Expr(16), Expr(8)}), b1 = g.parameter("b1", {Expr(16)});
    Tensor w2 = g.parameter("w2", {Expr(8), Expr(16)}), b2 = g.parameter("b2", {Expr(8)});
    Tensor h = ops::relu(x.matmul(w1.transpose(0, 1)) + b1);
    out = h.matmul(w2.transpose(0, 1)) + b2;
    g.mark_output(out, "y");
  }
};

ParallelSpec megatron(int shards) {
  ParallelSpec s;
  s.shards = shards;
  s.shardings = {{"w1", Sharding::split(0)}, {"b1", Sharding::split(0)}, {"w2", Sharding::split(1)}};
  return s;
}

}  // namespace

TEST(Propagate, ColumnThenRowParallelNeedsOneAllReduce) {
  Mlp m;
  ShardedGraph s = propagate(m.g, megatron(2));
  EXPECT_EQ(count(s, CommKind::AllReduce), 1) << s.summary();
  EXPECT_EQ(count(s, CommKind::AllGather), 0) << s.summary();
  EXPECT_EQ(s.levels(), 2);
  LocalGraph l = localize(m.g, s, 1);
  EXPECT_EQ(to_string(l.graph.node(l.graph.find_input("w1")).shape), "[8, 8]");
  EXPECT_EQ(to_string(l.graph.node(l.graph.find_input("w2")).shape), "[8, 8]");
  SegmentPlan p = cut_segments(l, 1 << 20);
  ASSERT_EQ(p.segments.size(), 2u);  // before and after the all-reduce
  EXPECT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(p.segments[1].comms_in.size(), 1u);
  EXPECT_EQ(p.segments[1].outputs, std::vector<std::string>{"y"});
}

TEST(Propagate, ASplitThatDoesNotShowThroughIsGathered) {
  Graph g;
  Tensor w = g.parameter("w", {Expr(6), Expr(4)});
  g.mark_output(w.slice(0, Expr(1), Expr(5)) * 2.0, "y");  // a slice of the split axis
  ParallelSpec s;
  s.shards = 2;
  s.shardings["w"] = Sharding::split(0);
  ShardedGraph sg = propagate(g, s);
  EXPECT_EQ(count(sg, CommKind::AllGather), 1) << sg.summary();
}

TEST(Propagate, BadPlansAreClearErrors) {
  Mlp m;
  ParallelSpec s = megatron(3);
  EXPECT_NE(error_of([&] { propagate(m.g, s); }).find("'b1' [16] along axis 0 into 3 shards, but that dim (16) is not a constant multiple of 3"), std::string::npos)
      << error_of([&] { propagate(m.g, s); });
  s = megatron(2);
  s.shardings["nope"] = Sharding::split(0);
  EXPECT_NE(error_of([&] { propagate(m.g, s); }).find("'nope', which is no input"), std::string::npos);
  s = megatron(2);
  s.shardings["w1"] = Sharding::split(2);
  EXPECT_NE(error_of([&] { propagate(m.g, s); }).find("along axis 2, which it does not have"), std::string::npos);
  s = megatron(2);
  s.stages = 2;
  EXPECT_NE(error_of([&] { propagate(m.g, s); }).find("not supported"), std::string::npos);
  Graph g;  // a split state written through a view that slices the split axis
  Tensor state = g.state("kv", {Expr(4), Expr(3)});
  Tensor v = g.input("v", {Expr(2), Expr(3)});
  g.assign(state.slice(0, Expr(0), Expr(2)), v);
  g.mark_output(state * 1.0, "y");
  ParallelSpec t;
  t.shards = 2;
  t.shardings["kv"] = Sharding::split(0);
  EXPECT_NE(error_of([&] { propagate(g, t); }).find("does not keep that split"), std::string::npos);
}

TEST(Propagate, DataParallelGradientsArePartialAndBucketed) {
  Graph g;
  Tensor x = g.input("x", {Expr(8), Expr(5)});
  Tensor w1 = g.state("w1", {Expr(5), Expr(6)}), w2 = g.state("w2", {Expr(6), Expr(1)});
  Tensor loss = ops::mean(ops::tanh(x.matmul(w1)).matmul(w2));
  std::vector<Tensor> grads = passes::gradients(loss, {w1, w2});
  ShardedGraph s = propagate(g, data_parallel({"x"}, 2), {{"g1", grads[0].edge()}, {"g2", grads[1].edge()}, {"loss", loss.edge()}});
  EXPECT_EQ(count(s, CommKind::AllReduce), 3) << "two gradients and the loss, each a sum over the batch: " << s.summary();
  EXPECT_EQ(count(s, CommKind::AllGather), 0) << s.summary();
  LocalGraph l = localize(g, s, 0);
  EXPECT_EQ(cut_segments(l, 1 << 20).groups.size(), 1u) << "one bucket";
  EXPECT_EQ(cut_segments(l, 1).groups.size(), 3u) << "a bucket each";
}

TEST(Placement, ANormFollowsItsActivationToTheNextStage) {
  models::LlamaConfig c = models::LlamaConfig::from_json(
      R"({"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 4, "num_attention_heads": 2, "intermediate_size": 32})");
  Graph g;
  models::Llama model(g, c);
  Tensor tokens = g.input("tokens", {Expr(1), Expr(1)}, DType::I32);
  g.mark_output(model.step(tokens, g.dim("past"), 16), "logits");
  ShardedGraph s = propagate(g, llama_pipeline(c, 4));
  EXPECT_EQ(count(s, CommKind::Transfer), 3) << "one activation per stage boundary: " << s.summary();
  EXPECT_EQ(pipeline_layer_bounds(5, 2), (std::vector<int64_t>{0, 2, 5}));
  EXPECT_THROW(pipeline_layer_bounds(2, 3), Error);
}

TEST(CostModel, TensorParallelSplitsWorkAndMemory) {
  LlamaWorkload w;
  w.config = llama_preset("llama-7b");
  MachineModel m;
  StepEstimate one = estimate_decode(w, {1, 1, 1}, m), tp2 = estimate_decode(w, {2, 1, 1}, m);
  EXPECT_NEAR(tp2.compute_seconds, one.compute_seconds / 2, one.compute_seconds * 0.05);
  EXPECT_GT(tp2.comm_seconds, 0);
  EXPECT_EQ(one.comm_seconds, 0);
  EXPECT_LT(tp2.memory_bytes, one.memory_bytes * 0.6);
  StepEstimate pp2 = estimate_decode(w, {1, 2, 1}, m);
  EXPECT_NEAR(pp2.compute_seconds, one.compute_seconds, one.compute_seconds * 0.05) << "one token visits every stage";
  EXPECT_LT(estimate_prefill(w, {1, 2, 1}, m).seconds, estimate_prefill(w, {1, 1, 1}, m).seconds) << "chunks overlap";
  auto ranked = search_llama_plans(w, 4, m);
  EXPECT_EQ(ranked.size(), 6u);  // (tp, pp, dp) with tp * pp * dp = 4, all admitted by 32 heads
  EXPECT_TRUE(best_runnable(ranked).runnable());
  m.memory_bytes = 10e9;  // 7B f32 weights (27 GB) fit only when split four ways
  ranked = search_llama_plans(w, 4, m);
  EXPECT_TRUE(ranked.front().decode.fits);
  EXPECT_FALSE(ranked.back().decode.fits);
}
