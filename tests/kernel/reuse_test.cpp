// Reduction operands kept for a later loop (lumen/kernel/reuse.h): softmax
// computes exp once per element; kernels where keeping E would be wrong or
// lossy compute it twice. (Results are checked against the interpreter by
// tests/runtime/schedule_space_test.cpp and the fuzzer.)
#include <gtest/gtest.h>

#include <functional>

#include "lumen/kernel/lower.h"
#include "lumen/kernel/schedule_space.h"
#include "lumen/ops/reduce.h"

namespace lumen {
namespace {

int count_exp2(const kernel::Value& v) {
  int n = v->kind == kernel::ValueKind::Unary && v->op == Op::Exp2 ? 1 : 0;
  for (const kernel::Value& a : v->args) n += count_exp2(a);
  return n;
}

int count_exp2(const kernel::Block& block) {
  int n = 0;
  for (const kernel::Stmt& s : block) {
    if (s.value) n += count_exp2(s.value);
    n += count_exp2(s.body);
  }
  return n;
}

// Lowers the graph's first output with the heuristic schedule.
kernel::Kernel lower_output(const Graph& g) {
  NodeId out = g.outputs().at(0).edge.node;
  std::vector<bool> materialized(g.size(), false);
  for (size_t i = 0; i < g.size(); ++i) materialized[i] = g.nodes()[i].op == Op::Input;
  materialized[static_cast<size_t>(out)] = true;
  kernel::KernelFacts f = kernel::kernel_facts(g, out, materialized, kernel::Target{16, 2});
  kernel::Schedule s = kernel::Schedule::from_actions(f.shape, kernel::knob_actions(f, kernel::heuristic_knobs(f)));
  return kernel::lower(g, out, materialized, s, "k").kernel;
}

TEST(Reuse, SoftmaxComputesExpOncePerElement) {
  Graph g;
  g.mark_output(ops::softmax(g.input("x", {Expr(8), Expr(64)}), -1), "y");
  EXPECT_EQ(count_exp2(lower_output(g).body), 1);
}

TEST(Reuse, AnF16OutputCannotHoldTheF32Exp) {
  Graph g;
  g.mark_output(ops::softmax(g.input("x", {Expr(8), Expr(64)}), -1).cast(DType::F16), "y");
  EXPECT_EQ(count_exp2(lower_output(g).body), 2);
}

TEST(Reuse, LogSoftmaxStoresNoExpSoNothingIsKept) {
  Graph g;
  g.mark_output(ops::log_softmax(g.input("x", {Expr(8), Expr(64)}), -1), "y");
  EXPECT_EQ(count_exp2(lower_output(g).body), 1);
}

}  // namespace
}  // namespace lumen
