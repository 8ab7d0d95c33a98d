// The e-graph engine: patterns, view composition, hash-consing and
// congruence, bounded saturation on real graphs, distinct candidates that
// all evaluate the same, round trips of model graphs.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <set>

#include "lumen/core/tensor.h"
#include "lumen/egraph/extract.h"
#include "lumen/egraph/graph_hash.h"
#include "lumen/egraph/rules.h"
#include "lumen/egraph/saturate.h"
#include "lumen/models/llama.h"
#include "lumen/ops/ops.h"
#include "tests/egraph/egraph_test_util.h"

namespace lumen::egraph {
namespace {

using testing::evaluate;
using testing::expect_same;
using testing::random_inputs;

void expect_error(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    FAIL() << "no error; expected one containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(EgraphPattern, BadPatternsNameTheProblem) {
  PatternScope scope;
  expect_error([&] { parse_pattern("(frobnicate ?a)", scope, true); }, "unknown op 'frobnicate'");
  expect_error([&] { parse_pattern("(add ?a ?b", scope, true); }, "missing ')'");
  expect_error([&] { parse_pattern("(add ?a)", scope, true); }, "add takes 2 operands");
  expect_error([&] { parse_pattern("(exp2:k ?a)", scope, true); }, "only reductions and gather take an :axis");
  expect_error([&] { rule("bad", "(add ?a ?b)", "(mul ?a ?c)"); }, "variable ?c is not bound by the left side");
  expect_error([&] { rule("bad", "(sum:k ?a)", "(sum:j ?a)"); }, "axis :j is not bound");
  expect_error([&] { parse_pattern("(add ?a ?b) ?c", scope, true); }, "unexpected text after the pattern");
}

// Reading x through u then (after materialising) through v equals reading
// x through u.then(v), for random chains of movement ops.
TEST(EgraphView, ThenComposesViewsLikeMaterialisingBetweenThem) {
  std::mt19937 rng(5);
  auto random_view = [&](View v) {
    for (int step = 0; step < 3; ++step) {
      Shape s = v.shape();
      switch (rng() % 5) {
        case 0: {
          std::vector<int> order(s.size());
          for (size_t d = 0; d < s.size(); ++d) order[d] = static_cast<int>(s.size() - 1 - d);
          v = v.permute(order);
          break;
        }
        case 1: v = v.slice(0, 0, s[0].value() > 1 ? s[0].value() - 1 : 1); break;
        case 2: v = v.flip(static_cast<int>(s.size() - 1)); break;
        case 3: {
          std::vector<std::pair<Expr, Expr>> pad(s.size(), {Expr(0), Expr(0)});
          pad[0] = {Expr(1), Expr(0)};
          v = v.pad(pad);
          break;
        }
        default: {
          Shape flat{shape_numel(s)};
          v = v.reshape(flat);
          int64_t n = flat[0].value();
          if (n % 2 == 0) v = v.reshape({Expr(2), Expr(n / 2)});
          break;
        }
      }
    }
    return v;
  };
  for (int trial = 0; trial < 40; ++trial) {
    Graph g;
    Tensor x = g.input("x", {Expr(3), Expr(4)});
    View u = random_view(View::contiguous(x.shape()));
    View v = random_view(View::contiguous(u.shape()));
    Tensor mid = Tensor(&g, x.node_id(), u).contiguous();
    g.mark_output(Tensor(&g, mid.node_id(), v), "two_steps");
    g.mark_output(Tensor(&g, x.node_id(), u.then(v)), "composed");
    auto out = evaluate(g, random_inputs(g, static_cast<uint32_t>(trial)));
    expect_same({out[0]}, {out[1]}, 0, 0, "u " + u.to_string() + " then v " + v.to_string());
  }
  expect_error([] { View::contiguous({Expr(2)}).then(View::contiguous({Expr(3)})); }, "cannot read a view of shape [3]");
}

TEST(EgraphEngine, HashConsingAndCongruenceClosure) {
  Graph g;
  Tensor a = g.input("a", {Expr(4)}), b = g.input("b", {Expr(4)});
  Tensor ea_t = a.exp2();  // node 2
  Tensor eb_t = b.exp2();  // node 3
  g.mark_output(ea_t + eb_t);
  g.mark_output(a.exp2(), "again");  // a new node, the same e-node as node 2
  EGraph eg;
  GraphRoots roots = eg.add_graph(g);
  EXPECT_EQ(eg.find(roots.node_class[2]), eg.find(roots.outputs[1].cls));
  ClassId ea = eg.find(roots.node_class[2]);  // exp2(a)
  ClassId eb = eg.find(roots.node_class[3]);  // exp2(b)
  ASSERT_NE(ea, eb);
  size_t before = eg.class_count();
  eg.merge(roots.node_class[0], roots.node_class[1]);  // pretend a == b
  EXPECT_GT(eg.rebuild(), 0u);
  EXPECT_EQ(eg.find(ea), eg.find(eb)) << "congruence: a == b must make exp2(a) == exp2(b)";
  EXPECT_EQ(eg.class_count(), before - 2);
  expect_error([&] { eg.merge(roots.node_class[0], roots.outputs[0].cls == roots.node_class[0] ? 0 : eg.add_view(eg.edge(roots.node_class[0], View::contiguous({Expr(4)}).reshape({Expr(2), Expr(2)})))); },
               "merging classes of different shapes");
}

// Graphs the saturation and extraction tests run on: general compositions
// (softmax, attention, a norm, a conv) built by lumen/ops, not by rules.
std::vector<std::pair<std::string, Graph>> test_graphs() {
  std::vector<std::pair<std::string, Graph>> graphs;
  {
    Graph g;
    Tensor x = g.input("x", {Expr(3), Expr(7)});
    g.mark_output(ops::softmax(x, -1));
    graphs.emplace_back("softmax", std::move(g));
  }
  {
    Graph g;
    Tensor q = g.input("q", {Expr(1), Expr(2), Expr(5), Expr(4)});
    Tensor k = g.input("k", {Expr(1), Expr(2), Expr(6), Expr(4)});
    Tensor v = g.input("v", {Expr(1), Expr(2), Expr(6), Expr(3)});
    g.mark_output(ops::scaled_dot_product_attention(q, k, v));
    graphs.emplace_back("attention", std::move(g));
  }
  {
    Graph g;
    Tensor x = g.input("x", {Expr(1), Expr(2), Expr(6), Expr(5)});
    Tensor w = g.input("w", {Expr(3), Expr(2), Expr(3), Expr(3)});
    Tensor b = g.input("b", {Expr(3)});
    g.mark_output(ops::conv2d(x, w, b, {1, 1}, {1, 1}));
    graphs.emplace_back("conv2d", std::move(g));
  }
  {
    Graph g;
    Tensor x = g.input("x", {Expr(4), Expr(8)});
    Tensor ms = (x * x).sum(1, true) * (1.0 / 8.0);
    g.mark_output(x * (ms + 1e-5).sqrt().recip());
    graphs.emplace_back("rms", std::move(g));
  }
  return graphs;
}

models::LlamaConfig small_llama(int64_t layers) {
  models::LlamaConfig c;
  c.vocab = 8;
  c.dim = 16;
  c.layers = layers;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_dim = 4;
  c.hidden = 24;
  c.validate();
  return c;
}

Graph llama_graph(const models::LlamaConfig& c, int64_t seq, int64_t past, int64_t capacity) {
  Graph g;
  models::Llama model(g, c);
  Tensor tokens = g.input("tokens", {Expr(1), Expr(seq)}, DType::I32);
  g.mark_output(model.step(tokens, Expr(past), capacity), "logits");
  return g;
}

TEST(EgraphSaturation, StopsWithinItsLimitsOnEveryTestGraph) {
  std::vector<Rule> rules = default_rules();
  auto graphs = test_graphs();
  graphs.emplace_back("llama", llama_graph(small_llama(1), 3, 2, 8));
  for (const auto& [name, graph] : graphs) {
    size_t unlimited_nodes = 0;
    for (int variant = 0; variant < 4; ++variant) {
      Limits limits;
      StopReason expected = StopReason::Saturated;
      size_t initial = graph.size();
      if (variant == 1) {
        limits.max_nodes = initial + 4;
        expected = unlimited_nodes > limits.max_nodes ? StopReason::NodeLimit : StopReason::Saturated;
      }
      if (variant == 2) limits.max_iterations = 1, expected = StopReason::IterationLimit;
      if (variant == 3) limits.max_seconds = 0, expected = StopReason::TimeLimit;
      EGraph eg;
      eg.add_graph(graph);
      auto start = std::chrono::steady_clock::now();
      SaturationReport r = saturate(eg, rules, limits);
      double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::string what = name + " variant " + std::to_string(variant) + ": " + r.summary();
      EXPECT_LE(r.iterations, limits.max_iterations) << what;
      EXPECT_LE(r.nodes, std::max(limits.max_nodes, initial) + kNodeLimitSlack) << what;
      if (variant == 0) unlimited_nodes = r.nodes;
      EXPECT_LE(wall, limits.max_seconds + 1.0) << what;
      if (variant > 0) { EXPECT_EQ(r.stop, expected) << what; }  // default limits: any reason, but it stops
      if (r.stop == StopReason::IterationLimit) { EXPECT_EQ(r.iterations, limits.max_iterations) << what; }
    }
  }
}

TEST(EgraphExtraction, DistinctCandidatesAllEvaluateTheSame) {
  std::vector<Rule> rules = default_rules();
  for (auto& [name, graph] : test_graphs()) {
    EGraph eg;
    GraphRoots roots = eg.add_graph(graph);
    Limits limits;
    limits.max_nodes = 4000;
    SaturationReport r = saturate(eg, rules, limits);
    Extractor ex(eg, roots, graph);
    std::vector<Candidate> cands = ex.candidates(6);
    bool beyond_operand_order = false;  // candidates differing only in add/mul operand order count as one
    for (const auto& [rule_name, count] : r.fired) {
      beyond_operand_order = beyond_operand_order || (count > 0 && rule_name != "add-comm" && rule_name != "mul-comm");
    }
    EXPECT_GE(cands.size(), beyond_operand_order ? 2u : 1u) << name << ": " << r.summary();
    std::set<uint64_t> hashes;
    int originals = 0;
    auto inputs = random_inputs(graph, 11);
    auto want = evaluate(graph, inputs);
    for (size_t i = 0; i < cands.size(); ++i) {
      EXPECT_TRUE(hashes.insert(cands[i].hash).second) << name << ": candidate " << i << " repeats another";
      EXPECT_EQ(cands[i].hash, graph_hash(cands[i].graph, cands[i].outputs));
      if (i > 0 && !cands[i].original) { EXPECT_LE(cands[i - 1].cost, cands[i].cost) << name << ": not ranked"; }
      originals += cands[i].original ? 1 : 0;
      expect_same(want, evaluate(cands[i].graph, inputs), 1e-4, 1e-5, name + " candidate " + cands[i].label);
    }
    EXPECT_EQ(originals, 1) << name << ": the original graph must be exactly one candidate";
  }
}

// General rules, composed: mul-assoc/comm expose softmax's 1/sum as a factor
// constant along the P·V reduction, sum-factor-out moves it after that sum,
// and the DAG cost model prefers the result (an [S, D] multiply, not [S, S]).
TEST(EgraphExtraction, AttentionNormalisationMovesAfterTheWeightedSum) {
  Graph g;
  Shape s{Expr(1), Expr(2), Expr(48), Expr(8)};
  g.mark_output(ops::scaled_dot_product_attention(g.input("q", s), g.input("k", s), g.input("v", s)));
  EGraph eg;
  GraphRoots roots = eg.add_graph(g);
  SaturationReport r = saturate(eg, default_rules(), Limits{});
  EXPECT_GT(r.fired["sum-factor-out"], 0u) << r.summary();
  Extractor ex(eg, roots, g);
  std::vector<Candidate> cands = ex.candidates(4);
  ASSERT_FALSE(cands.empty());
  const Candidate& best = cands[0];
  EXPECT_FALSE(best.original) << "the rewritten program must be ranked first";
  const Node& out = best.graph.node(best.graph.outputs()[0].edge.node);
  ASSERT_EQ(out.op, Op::Mul);
  bool sum_operand = false, recip_operand = false;
  for (const Edge& e : out.inputs) {
    sum_operand = sum_operand || best.graph.node(e.node).op == Op::SumReduce;
    recip_operand = recip_operand || best.graph.node(e.node).op == Op::Recip;
  }
  EXPECT_TRUE(sum_operand && recip_operand) << "the output should be (sum_j e_ij v_jd) * (1 / sum_j e_ij)";
  auto inputs = random_inputs(g, 4);
  expect_same(evaluate(g, inputs), evaluate(best.graph, inputs), 1e-4, 1e-6, "attention, normalised last");
}

// Dynamic dims: rules and extraction keep symbolic shapes, dims and
// constraints; every candidate evaluates the same at a binding.
TEST(EgraphExtraction, DynamicDimsSurviveRewritesAndExtraction) {
  Graph g;
  Expr n = g.dim("n");
  g.require(ge(n, Expr(2)), "n must be at least 2");
  Tensor x = g.input("x", {n, Expr(6)});
  Tensor w = g.input("w", {Expr(6), Expr(3)});
  g.mark_output(ops::softmax(ops::matmul(x, w), -1).sum_reduce(0), "y");
  EGraph eg;
  GraphRoots roots = eg.add_graph(g);
  SaturationReport r = saturate(eg, default_rules(), Limits{});
  Extractor ex(eg, roots, g);
  std::vector<Candidate> cands = ex.candidates(5);
  EXPECT_GE(cands.size(), 2u) << r.summary();
  for (int64_t bound : {2, 5}) {
    Bindings b{{"n", bound}};
    std::map<std::string, Array> inputs;
    std::mt19937 rng(static_cast<uint32_t>(bound));
    std::uniform_real_distribution<double> u(-1, 1);
    for (const auto& [name, shape] : {std::pair<std::string, std::vector<int64_t>>{"x", {bound, 6}}, {"w", {6, 3}}}) {
      Array a(DType::F32, shape);
      for (int64_t i = 0; i < a.numel(); ++i) a.set(i, u(rng));
      inputs.emplace(name, std::move(a));
    }
    auto want = interp::Interpreter(g).run(inputs, {g.outputs()[0].edge}, b);
    for (const Candidate& c : cands) {
      EXPECT_EQ(c.graph.dim_names(), g.dim_names());
      EXPECT_EQ(c.graph.constraints().size(), g.constraints().size());
      expect_same(want, interp::Interpreter(c.graph).run(inputs, c.outputs, b), 1e-4, 1e-6, "n = " + std::to_string(bound) + " " + c.label);
    }
  }
}

TEST(EgraphExtraction, NoApplicableRuleExtractsTheOriginal) {
  Graph g;
  Tensor x = g.input("x", {Expr(3), Expr(5)});
  Tensor y = x.permute({1, 0}).contiguous().sqrt();
  g.mark_output(y, "y");
  EGraph eg;
  GraphRoots roots = eg.add_graph(g);
  SaturationReport r = saturate(eg, default_rules(), Limits{});
  EXPECT_EQ(r.stop, StopReason::Saturated) << r.summary();
  for (const auto& [rule_name, count] : r.fired) { EXPECT_EQ(count, 0u) << rule_name; }
  Extractor ex(eg, roots, g);
  std::vector<Candidate> cands = ex.candidates(4);
  ASSERT_EQ(cands.size(), 1u);
  EXPECT_TRUE(cands[0].original);
  EXPECT_EQ(graph_hash(ex.build(ex.best())), graph_hash(g)) << "the best extraction is the graph itself";
}

TEST(EgraphExtraction, RoundTripOfModelGraphsEvaluatesTheSame) {
  auto graphs = test_graphs();
  graphs.emplace_back("llama", llama_graph(small_llama(2), 3, 2, 8));
  for (const auto& [name, graph] : graphs) {
    Graph back = round_trip(graph);
    EXPECT_EQ(graph_hash(back), graph_hash(graph)) << name;
    ASSERT_EQ(back.outputs().size(), graph.outputs().size());
    ASSERT_EQ(back.updates().size(), graph.updates().size()) << name << ": state updates kept";
    for (size_t i = 0; i < graph.outputs().size(); ++i) EXPECT_EQ(back.outputs()[i].name, graph.outputs()[i].name);
    for (NodeId id : graph.input_ids()) {
      NodeId other = back.find_input(graph.node(id).name);
      ASSERT_GE(other, 0) << name << ": input " << graph.node(id).name << " lost";
      EXPECT_EQ(back.node(other).dtype, graph.node(id).dtype);
      EXPECT_EQ(back.node(other).persistent, graph.node(id).persistent);
      EXPECT_EQ(back.node(other).parameter, graph.node(id).parameter);
    }
    auto inputs = random_inputs(graph, 3);
    expect_same(evaluate(graph, inputs), evaluate(back, inputs), 0, 0, name + " round trip");
  }
}

// Extraction keeps the order the graph was written in, not the depth-first
// order of its roots: a value made early for a late root (a weight gradient
// of a training step, reached first from its state update) stays early, so
// what it reads need not live until the end.
TEST(EgraphExtraction, NodesKeepTheOriginalOrder) {
  Graph g;
  Tensor x = g.input("x", {Expr(4), Expr(6)});
  Tensor early = x.exp2();  // written first, read only by the second output
  Tensor late = x.log2();
  g.mark_output(late + late.scalar(1), "first");
  g.mark_output(early * early.scalar(2), "second");
  Graph back = round_trip(g);
  std::vector<Op> order;
  for (const Node& n : back.nodes()) {
    if (n.op == Op::Exp2 || n.op == Op::Log2) order.push_back(n.op);
  }
  EXPECT_EQ(order, (std::vector<Op>{Op::Exp2, Op::Log2}));
}

// The whole Llama 110M-shaped graph (12 layers, dim 768): how long the
// graph-level stage takes with the default limits. Printed, not gated.
TEST(EgraphSaturation, Llama110MShapedGraphTime) {
  models::LlamaConfig c;
  c.vocab = 32000;
  c.dim = 768;
  c.layers = 12;
  c.heads = 12;
  c.kv_heads = 12;
  c.head_dim = 64;
  c.hidden = 2048;
  c.validate();
  Graph g = llama_graph(c, 128, 0, 1024);
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  EGraph eg;
  GraphRoots roots = eg.add_graph(g);
  auto t1 = Clock::now();
  Limits limits;
  SaturationReport r = saturate(eg, default_rules(), limits);
  auto t2 = Clock::now();
  Extractor ex(eg, roots, g);
  std::vector<Candidate> cands = ex.candidates(4);
  auto t3 = Clock::now();
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::printf("llama-110M-shaped graph: %zu nodes; add %.0f ms, saturate %.0f ms, extract %zu candidates %.0f ms\n%s\n",
              g.size(), ms(t0, t1), ms(t1, t2), cands.size(), ms(t2, t3), r.summary().c_str());
  EXPECT_LE(r.nodes, limits.max_nodes + kNodeLimitSlack);
  EXPECT_LE(r.iterations, limits.max_iterations);
  EXPECT_GE(cands.size(), 1u);
}

}  // namespace
}  // namespace lumen::egraph
