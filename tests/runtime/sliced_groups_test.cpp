// Sliced execution (lumen/kernel/slicing.h): groups of kernels run chunk by
// chunk along an independent axis must compute what the interpreter does,
// with internal buffers one chunk large; groups without an independent axis
// stay as they are.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

#include "lumen/lumen.h"
#include "lumen/ops/attention.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/linalg.h"
#include "lumen/ops/reduce.h"
#include "lumen/runtime/cpu_executor.h"
#include "lumen/runtime/interp_executor.h"

namespace lumen {
namespace {

Array random_array(const std::vector<int64_t>& shape, unsigned seed) {
  Array a(DType::F32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> value(-1, 1);
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, value(rng));
  return a;
}

CpuOptions sliced(int64_t chunk) {
  CpuOptions o;
  o.search.use_cache = false;
  o.slice.always = true;
  o.slice.chunk = chunk;
  return o;
}

// Runs the graph's outputs on the CPU with `options` and on the interpreter;
// expects every element to agree. Returns the CPU executor.
std::unique_ptr<CpuExecutor> check_against_interpreter(const std::shared_ptr<Graph>& g, const std::vector<Tensor>& outs,
                                                       const std::map<std::string, Array>& inputs,
                                                       const CpuOptions& options, double tolerance = 2e-5) {
  std::vector<Edge> edges;
  for (const Tensor& t : outs) edges.push_back(t.edge());
  auto cpu = std::make_unique<CpuExecutor>(g, edges, options);
  InterpExecutor interp(g, edges);
  std::vector<Array> got = cpu->execute(inputs, {});
  std::vector<Array> want = interp.execute(inputs, {});
  EXPECT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size() && o < want.size(); ++o) {
    std::vector<float> a = got[o].to_floats(), b = want[o].to_floats();
    EXPECT_EQ(a.size(), b.size());
    size_t bad = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (std::fabs(a[i] - b[i]) > tolerance * (1 + std::fabs(b[i])) && bad++ < 5) {
        ADD_FAILURE() << "output " << o << " element " << i << ": " << a[i] << " vs " << b[i];
      }
    }
  }
  return cpu;
}

struct Attention {
  std::shared_ptr<Graph> g = std::make_shared<Graph>();
  Tensor out;
  std::map<std::string, Array> inputs;
};

Attention attention(int64_t heads, int64_t s, int64_t d, bool causal) {
  Attention a;
  Tensor q = a.g->input("q", {Expr(1), Expr(heads), Expr(s), Expr(d)});
  Tensor k = a.g->input("k", {Expr(1), Expr(heads), Expr(s), Expr(d)});
  Tensor v = a.g->input("v", {Expr(1), Expr(heads), Expr(s), Expr(d)});
  a.out = ops::scaled_dot_product_attention(q, k, v, std::nullopt, causal);
  a.inputs = {{"q", random_array({1, heads, s, d}, 1)},
              {"k", random_array({1, heads, s, d}, 2)},
              {"v", random_array({1, heads, s, d}, 3)}};
  return a;
}

TEST(SlicedGroups, AttentionMatchesTheInterpreterWhenTheChunkDividesTheRows) {
  Attention a = attention(2, 48, 16, false);
  auto cpu = check_against_interpreter(a.g, {a.out}, a.inputs, sliced(16));
  EXPECT_EQ(cpu->stats().at("sliced_groups"), 1);
}

TEST(SlicedGroups, AttentionMatchesTheInterpreterWhenTheChunkDoesNotDivideTheRows) {
  Attention a = attention(2, 50, 16, false);
  auto cpu = check_against_interpreter(a.g, {a.out}, a.inputs, sliced(12));
  EXPECT_EQ(cpu->stats().at("sliced_groups"), 1);
}

TEST(SlicedGroups, CausalAttentionReadsTheChunkOriginForItsMask) {
  Attention a = attention(3, 40, 8, true);
  auto cpu = check_against_interpreter(a.g, {a.out}, a.inputs, sliced(16));
  EXPECT_EQ(cpu->stats().at("sliced_groups"), 1);
}

TEST(SlicedGroups, SlicingCanBeTurnedOff) {
  Attention a = attention(2, 48, 16, false);
  CpuOptions o = sliced(16);
  o.slice.enabled = false;
  auto cpu = check_against_interpreter(a.g, {a.out}, a.inputs, o);
  EXPECT_EQ(cpu->stats().at("sliced_groups"), 0);
}

}  // namespace
}  // namespace lumen
