// A program run with a dynamic dim that grows, shrinks and grows again: the
// memory plan is kept while every buffer fits the slot it was planned with
// and redone with room when one outgrows it — each run's output must equal
// the one computed by a fresh program at those dims.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "lumen/compile.h"
#include "lumen/core/tensor.h"
#include "lumen/ops/reduce.h"

namespace lumen {
namespace {

CompileOptions cpu_options() {
  CompileOptions o;
  o.backend = Backend::Cpu;
  o.tuning_cache = false;
  return o;
}

// Several intermediates whose sizes follow n, live at overlapping times.
Tensor build(Graph& g) {
  Expr n = g.dim("n");
  Tensor a = g.input("a", {n, Expr(8)});
  Tensor b = ops::softmax(a * a.scalar(3), -1);  // [n, 8]
  Tensor c = (a.exp() + b).sum(1);                // [n]
  Tensor d = b.sum(0) * a.sum(0);                 // [8]
  return c.sum(0) + d.sum(0);
}

std::vector<float> values(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n * 8));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i));
  return v;
}

TEST(PlanReuse, GrowingShrinkingAndRegrowingDimsGiveFreshResults) {
  Graph g;
  Program p = compile(g, {build(g)}, cpu_options());
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n <= 40; ++n) sizes.push_back(n);  // a decode-like growth, one at a time
  for (int64_t n : {3, 700, 5, 2000, 1, 2001, 64}) sizes.push_back(n);
  for (int64_t n : sizes) {
    p.set("a", Array::from_floats(values(n), {n, 8}));
    p.run();
    Graph fresh_graph;
    Program fresh = compile(fresh_graph, {build(fresh_graph)}, cpu_options());
    fresh.set("a", Array::from_floats(values(n), {n, 8}));
    fresh.run();
    ASSERT_EQ(p.get(p.output_names()[0]).to_floats(), fresh.get(fresh.output_names()[0]).to_floats()) << "n = " << n;
  }
}

}  // namespace
}  // namespace lumen
