// Tests for lumen/passes/recompute.h: late readers read a copy of the value
// (and of every node between it and the kept values it reads), early readers
// and outputs read the originals, state updates count as late, every output
// computes what it did (the interpreter gives the same bits), and bad
// requests are errors.
#include "lumen/passes/recompute.h"

#include <gtest/gtest.h>

#include <cmath>

#include "lumen/backend/interp/interpreter.h"
#include "lumen/core/tensor.h"

namespace lumen {
namespace {

// a = exp2(x * 0.5) is kept; t = a + 1 is inlined; `early` (a row sum of t)
// comes before `from`, `late` (t · w, then a row max) after it.
struct Chain {
  Graph g;
  Tensor x, w, scaled, a, t, early, late;
  NodeId from = -1;
  Chain() {
    x = g.input("x", {Expr(4), Expr(9)});
    w = g.input("w", {Expr(9)});
    scaled = x * x.scalar(0.5);
    a = scaled.exp2();
    t = a + a.scalar(1);
    early = t.sum(1);
    from = static_cast<NodeId>(g.size());
    late = (t * w.reshape({Expr(1), Expr(9)}).expand({Expr(4), Expr(9)})).max_reduce(1);
    g.mark_output(early, "early");
    g.mark_output(late, "late");
  }
  // Inputs, a and the outputs have buffers; scaled and t are inlined.
  std::vector<bool> kept() const {
    std::vector<bool> k(g.size(), false);
    for (NodeId n : {x.node_id(), w.node_id(), a.node_id(), early.node_id(), late.node_id()})
      k[static_cast<size_t>(n)] = true;
    return k;
  }
  std::map<std::string, Array> inputs() const {
    std::vector<float> xv, wv;
    for (int i = 0; i < 36; ++i) xv.push_back(std::sin(0.7f * static_cast<float>(i)));
    for (int i = 0; i < 9; ++i) wv.push_back(std::cos(1.3f * static_cast<float>(i)) - 0.2f);
    return {{"x", Array::from_floats(xv, {4, 9})}, {"w", Array::from_floats(wv, {9})}};
  }
};

// The node `id` reads through its inputs, first input first, `depth` times.
NodeId down(const Graph& g, NodeId id, int depth) {
  for (int i = 0; i < depth; ++i) id = g.node(id).inputs[0].node;
  return id;
}

TEST(Recompute, LateReadersReadACopyOfTheValueAndOfWhatItInlines) {
  Chain c;
  std::vector<Edge> outputs{c.early.edge(), c.late.edge()};
  passes::RecomputeRequest request{{c.a.node_id()}, c.kept(), c.from};
  passes::Recomputation r = passes::recompute(c.g, request, outputs);
  const Graph& out = r.graph;
  ASSERT_EQ(r.copies.size(), 1u);
  NodeId copy = r.copies[0];
  ASSERT_GE(copy, 0);
  EXPECT_EQ(out.node(copy).op, Op::Exp2);
  EXPECT_EQ(r.copied_nodes, 5);  // a, t, scaled and their two constants

  // Early: the row sum reads the original t, which reads the original a.
  NodeId early_t = down(out, outputs[0].node, 1);
  EXPECT_EQ(out.node(early_t).op, Op::Add);
  NodeId original_a = down(out, early_t, 1);
  EXPECT_EQ(out.node(original_a).op, Op::Exp2);
  EXPECT_NE(original_a, copy);
  // Late: the product reads a copy of t made from the copy of a, which reads
  // a copy of x * 0.5 (so the original is not inlined into both kernels).
  NodeId product = down(out, outputs[1].node, 1);
  ASSERT_EQ(out.node(product).op, Op::Mul);
  NodeId late_t = out.node(product).inputs[0].node;
  EXPECT_NE(late_t, early_t);
  EXPECT_EQ(down(out, late_t, 1), copy);
  NodeId late_scaled = down(out, copy, 1);
  EXPECT_NE(late_scaled, down(out, original_a, 1));
  EXPECT_EQ(out.node(down(out, late_scaled, 1)).op, Op::Input);
  EXPECT_LT(copy, product);  // the copy comes just before its first late reader
  EXPECT_GT(copy, outputs[0].node);

  // Every output computes the same bits.
  std::vector<Edge> before{c.early.edge(), c.late.edge()};
  std::vector<Array> want = interp::Interpreter(c.g).run(c.inputs(), before);
  std::vector<Array> got = interp::Interpreter(out).run(c.inputs(), outputs);
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(want[o].numel(), got[o].numel());
    for (int64_t i = 0; i < want[o].numel(); ++i)
      EXPECT_EQ(want[o].get(i), got[o].get(i)) << "output " << o << " at " << i;
  }
}

TEST(Recompute, StateUpdatesReadCopiesAndNoLateReaderMeansNoCopy) {
  Graph g;
  Tensor x = g.input("x", {Expr(6)});
  Tensor a = (x * x).recip();
  Tensor kept_sum = a.sum(0);
  Tensor state = g.state("s", {Expr(6)});
  g.assign(state, a * a.scalar(3));
  g.mark_output(kept_sum, "sum");
  std::vector<bool> kept(g.size(), false);
  for (NodeId n : {x.node_id(), a.node_id(), kept_sum.node_id(), state.node_id()}) kept[static_cast<size_t>(n)] = true;
  std::vector<Edge> outputs{kept_sum.edge()};
  passes::Recomputation r = passes::recompute(g, {{a.node_id()}, kept, static_cast<NodeId>(g.size())}, outputs);
  ASSERT_EQ(r.graph.updates().size(), 1u);
  NodeId update_value = r.graph.updates()[0].value.node;
  EXPECT_EQ(r.graph.node(update_value).op, Op::Mul);
  EXPECT_EQ(r.graph.node(update_value).inputs[0].node, r.copies[0]);     // a * 3 reads the copy of a
  EXPECT_NE(r.graph.node(outputs[0].node).inputs[0].node, r.copies[0]);  // the output's sum reads the original

  // With no update and no reader past `from`, nothing is copied.
  Graph plain;
  Tensor y = plain.input("y", {Expr(3)});
  Tensor b = y.exp2();
  plain.mark_output(b.sum(0), "out");
  std::vector<bool> k(plain.size(), true);
  std::vector<Edge> outs{plain.outputs()[0].edge};
  passes::Recomputation none = passes::recompute(plain, {{b.node_id()}, k, static_cast<NodeId>(plain.size())}, outs);
  EXPECT_EQ(none.copies[0], -1);
  EXPECT_EQ(none.copied_nodes, 0);
  EXPECT_EQ(none.graph.size(), plain.size());
}

TEST(Recompute, BadRequestsAreErrors) {
  Chain c;
  std::vector<Edge> outputs{c.early.edge()};
  auto message = [&](const passes::RecomputeRequest& r) {
    try {
      passes::recompute(c.g, r, outputs);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{c.late.node_id()}, c.kept(), c.from}).find("before `from`"), std::string::npos);
  EXPECT_NE(message({{c.x.node_id()}, c.kept(), c.from}).find("the input 'x'"), std::string::npos);
  EXPECT_NE(message({{c.a.node_id()}, std::vector<bool>(3, true), c.from}).find("`kept` has 3 entries"),
            std::string::npos);
  EXPECT_NE(message({{c.a.node_id()}, c.kept(), -2}).find("outside a graph"), std::string::npos);
}

}  // namespace
}  // namespace lumen
