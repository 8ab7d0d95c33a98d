// Sliced execution (lumen/kernel/slicing.h): groups of kernels run chunk by
// chunk along an independent axis must compute what the interpreter does,
// with internal buffers one chunk large; groups without an independent axis
// stay as they are.
#include <gtest/gtest.h>

#include <cstdlib>

#include <cmath>
#include <memory>
#include <random>

#include "lumen/lumen.h"
#include "lumen/ops/attention.h"
#include "lumen/ops/creation.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/linalg.h"
#include "lumen/ops/reduce.h"
#include "lumen/backend/cpu/cpu_backend.h"
#include "lumen/compiler/compiler.h"
#include "lumen/runtime/compiled_executor.h"
#include "lumen/runtime/interp_executor.h"
#include "tests/kernel/ir_terms.h"

namespace lumen {
namespace {

Array random_array(const std::vector<int64_t>& shape, unsigned seed) {
  Array a(DType::F32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> value(-1, 1);
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, value(rng));
  return a;
}

using Options = compiler::CompilerOptions;

Options sliced(int64_t chunk) {
  Options o;
  o.search.use_cache = false;
  o.slice.always = true;
  o.slice.chunk = chunk;
  return o;
}

// Runs the graph's outputs on the CPU with `options` and on the interpreter;
// expects every element to agree. Returns the CPU executor.
std::unique_ptr<CompiledExecutor> compiled(const Graph& g, const std::vector<Edge>& edges, const Options& options) {
  return std::make_unique<CompiledExecutor>(compiler::compile(g, edges, options, cpu::CpuBackend::shared()).program);
}

std::unique_ptr<CompiledExecutor> check_against_interpreter(const std::shared_ptr<Graph>& g,
                                                            const std::vector<Tensor>& outs,
                                                            const std::map<std::string, Array>& inputs,
                                                            const Options& options, double tolerance = 2e-5) {
  std::vector<Edge> edges;
  for (const Tensor& t : outs) edges.push_back(t.edge());
  auto cpu = compiled(*g, edges, options);
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

// Reduction terms of a compiled program: its group's kernels once per chunk,
// with the chunk origin bound as the runtime binds it.
int64_t program_terms(const backend::CompiledProgram& p) {
  int64_t total = 0;
  for (const backend::Launch& l : p.launches) {
    const kernel::Kernel& k = p.kernels[l.kernel];
    Bindings env;
    if (l.group < 0) {
      total += testing::reduction_terms(k.body, env);
      continue;
    }
    const kernel::SliceGroup& g = p.groups[static_cast<size_t>(l.group)];
    for (int64_t c = 0; c < g.chunks({}); ++c) {
      std::vector<int64_t> origin = g.origin(c, {});
      for (size_t a = 0; a < origin.size(); ++a) {
        if (!g.axes[a].origin_dim.empty()) env[g.axes[a].origin_dim] = origin[a];
      }
      total += testing::reduction_terms(k.body, env);
    }
  }
  return total;
}

// Squared distances between the rows of x [n, k] and y [m, k]: [n, m], the
// contraction over k inlined into whatever reads it.
Tensor pairwise_distances(Graph& g, int64_t n, int64_t m, int64_t k) {
  Tensor x = g.input("x", {Expr(n), Expr(k)});
  Tensor y = g.input("y", {Expr(m), Expr(k)});
  Shape cube{Expr(n), Expr(m), Expr(k)};
  Tensor diff = x.unsqueeze(1).expand(cube) - y.unsqueeze(0).expand(cube);
  return (diff * diff).sum(2);
}

TEST(SlicedGroups, PairwiseDistanceRowStatisticsMatchTheInterpreter) {
  // Per row: the nearest distance and a soft count of the rows about as near.
  // The [n, m] distances are read twice, so they get a buffer; rows are independent.
  auto g = std::make_shared<Graph>();
  Tensor d = pairwise_distances(*g, 70, 90, 24);
  Tensor nearest = ops::amin(d, {1}, true);
  Tensor near = ops::sum((nearest - d).exp(), {1});
  std::map<std::string, Array> inputs{{"x", random_array({70, 24}, 4)}, {"y", random_array({90, 24}, 5)}};
  auto cpu = check_against_interpreter(g, {near, nearest}, inputs, sliced(16), 1e-4);
  EXPECT_EQ(cpu->stats().at("sliced_groups"), 1);
}

TEST(SlicedGroups, AChainThatReducesOverEveryAxisStaysUnsliced) {
  // A softmax down the columns of the distances, then row sums: the columns'
  // reductions run over the rows the row sums keep, so no axis is independent.
  auto g = std::make_shared<Graph>();
  Tensor d = pairwise_distances(*g, 40, 48, 24);
  Tensor out = ops::sum(ops::softmax(d, 0), {1});
  std::map<std::string, Array> inputs{{"x", random_array({40, 24}, 6)}, {"y", random_array({48, 24}, 7)}};
  auto cpu = check_against_interpreter(g, {out}, inputs, sliced(8), 1e-4);
  EXPECT_EQ(cpu->stats().at("sliced_groups"), 0);
}

// Peak arena bytes of sliced attention (8 heads of 64, a fixed chunk of 32
// query rows) at sequence length s.
double attention_arena_bytes(int64_t s) {
  Attention a = attention(8, s, 64, false);
  auto cpu = compiled(*a.g, {a.out.edge()}, sliced(32));
  cpu->execute(a.inputs, {});
  EXPECT_EQ(cpu->stats().at("sliced_groups"), 1);
  return cpu->stats().at("arena_bytes");
}

TEST(SlicedGroups, AttentionArenaGrowsLinearlyInTheSequenceLength) {
  double a256 = attention_arena_bytes(256), a512 = attention_arena_bytes(512), a1024 = attention_arena_bytes(1024);
  // Unsliced, the scores alone are 8 * s * s floats: 4x per doubling.
  EXPECT_LT(a1024, 8.0 * 1024 * 1024 * 4);
  EXPECT_GT(a512 / a256, 1.5);
  EXPECT_LT(a512 / a256, 2.5);
  EXPECT_GT(a1024 / a512, 1.5);
  EXPECT_LT(a1024 / a512, 2.5);
}

TEST(SlicedGroups, TheDefaultOptionsSliceLargeAttention) {
  Attention a = attention(8, 1024, 64, false);
  Options o;
  o.search.use_cache = false;
  auto cpu = compiled(*a.g, {a.out.edge()}, o);
  std::vector<Array> out = cpu->execute(a.inputs, {});
  EXPECT_EQ(cpu->stats().at("sliced_groups"), 1);
  // The 2 x 32 MiB of scores and probabilities never exist at once.
  EXPECT_LT(cpu->stats().at("arena_bytes"), 16.0 * (1 << 20));
  // Row 1000 of head 5 against a direct computation.
  std::vector<float> q = a.inputs["q"].to_floats(), k = a.inputs["k"].to_floats(), v = a.inputs["v"].to_floats();
  std::vector<float> got = out[0].to_floats();
  size_t head = 5 * 1024 * 64, row = 1000;
  std::vector<double> p(1024);
  double top = -1e30, total = 0;
  for (size_t j = 0; j < 1024; ++j) {
    double dot = 0;
    for (size_t e = 0; e < 64; ++e) dot += q[head + row * 64 + e] * k[head + j * 64 + e];
    p[j] = dot / 8;
    top = std::max(top, p[j]);
  }
  for (double& x : p) total += (x = std::exp(x - top));
  for (size_t e = 0; e < 64; ++e) {
    double want = 0;
    for (size_t j = 0; j < 1024; ++j) want += p[j] / total * v[head + j * 64 + e];
    EXPECT_NEAR(got[head + row * 64 + e], want, 1e-4);
  }
}

TEST(SlicedGroups, WithABudgetTheChunkIsChosenByTimingCandidates) {
  Attention a = attention(2, 96, 16, false);
  Options o = sliced(32);
  o.search.budget_s = 0.5;
  auto cpu = check_against_interpreter(a.g, {a.out}, a.inputs, o);
  EXPECT_EQ(cpu->stats().at("sliced_groups"), 1);
  std::string report = cpu->report();
  // 32 rows (the given chunk), 16 and 64 were timed; whichever won, the result matched.
  EXPECT_NE(report.find("chunk rows timed: 32: "), std::string::npos) << report;
  EXPECT_NE(report.find(" 16: "), std::string::npos) << report;
  EXPECT_NE(report.find(" 64: "), std::string::npos) << report;
  EXPECT_NE(report.find(", chose "), std::string::npos) << report;
}

TEST(SlicedGroups, GroupedQueryAndCrossAttentionMatchTheInterpreter) {
  // 6 query heads on 2 key/value heads: keys are read at head h / 3, which
  // moves with the head (a chunk of one head) but not linearly in it. Keys
  // longer than queries (cross-attention).
  auto g = std::make_shared<Graph>();
  Tensor q = g->input("q", {Expr(1), Expr(6), Expr(40), Expr(16)});
  Tensor k = g->input("k", {Expr(1), Expr(2), Expr(56), Expr(16)});
  Tensor v = g->input("v", {Expr(1), Expr(2), Expr(56), Expr(16)});
  Tensor out = ops::scaled_dot_product_attention(q, k, v, std::nullopt, false, std::nullopt, true);
  std::map<std::string, Array> inputs{{"q", random_array({1, 6, 40, 16}, 8)},
                                      {"k", random_array({1, 2, 56, 16}, 9)},
                                      {"v", random_array({1, 2, 56, 16}, 10)}};
  auto cpu = check_against_interpreter(g, {out}, inputs, sliced(16));
  EXPECT_EQ(cpu->stats().at("sliced_groups"), 1);
}

// Attention written with plain ops, the mask applied as where(masked, -inf,
// scores) over arange rows and columns: where is a two-place gather
// (kernel/two_place_gather.h) computed inside the sliced group. `window` > 0:
// a sliding window of that many keys ending at the row.
Attention where_masked_attention(int64_t heads, int64_t s, int64_t d, int64_t window) {
  Attention a;
  Shape shape{Expr(1), Expr(heads), Expr(s), Expr(d)};
  Tensor q = a.g->input("q", shape), k = a.g->input("k", shape), v = a.g->input("v", shape);
  Tensor scores = ops::matmul(q, k.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(d)));
  Tensor row = ops::arange(*a.g, 0, static_cast<double>(s)).unsqueeze(1);
  Tensor col = ops::arange(*a.g, 0, static_cast<double>(s)).unsqueeze(0);
  Tensor masked = ops::gt(col, row);
  if (window > 0) masked = ops::logical_or(masked, ops::ge(row - col, ops::full(*a.g, {Expr(1)}, static_cast<double>(window))));
  scores = ops::where(masked, ops::full(*a.g, {Expr(1)}, -INFINITY), scores);
  a.out = ops::matmul(ops::softmax(scores, -1), v);
  a.inputs = {{"q", random_array({1, heads, s, d}, 11)},
              {"k", random_array({1, heads, s, d}, 12)},
              {"v", random_array({1, heads, s, d}, 13)}};
  return a;
}

// The causal bound of a chunk's rows depends on the chunk's origin (a dim
// bounded by the extent less the chunk): the reductions of a sliced causal
// `where` attention still skip the masked half.
TEST(SlicedGroups, SlicedCausalAttentionAddsAboutHalfTheTerms) {
  Attention plain = attention(2, 192, 16, false), causal = where_masked_attention(2, 192, 16, 0);
  auto compile = [](const Attention& a) {
    return compiler::compile(*a.g, {a.out.edge()}, sliced(32), cpu::CpuBackend::shared()).program;
  };
  backend::CompiledProgram full = compile(plain), masked = compile(causal);
  ASSERT_EQ(masked.groups.size(), 1u);
  ASSERT_EQ(masked.groups[0].axes.back().chunk, 32);
  int64_t full_terms = program_terms(full), masked_terms = program_terms(masked);
  EXPECT_LT(static_cast<double>(masked_terms), 0.65 * static_cast<double>(full_terms)) << masked_terms << " of " << full_terms;
  check_against_interpreter(causal.g, {causal.out}, causal.inputs, sliced(32));
  Attention uneven = where_masked_attention(2, 200, 16, 0);  // the last chunk shifted back: rows 168..199
  check_against_interpreter(uneven.g, {uneven.out}, uneven.inputs, sliced(32));
}

// The where (a Gather) runs inside the sliced group, not as a whole kernel before it.
void expect_where_sliced(const CompiledExecutor& cpu) {
  EXPECT_EQ(cpu.stats().at("sliced_groups"), 1);
  std::string report = cpu.report();
  size_t at = report.find("sliced group of");
  ASSERT_NE(at, std::string::npos) << report;
  EXPECT_NE(report.find("Gather_", at), std::string::npos) << report;
  EXPECT_LT(report.find("Gather_", at), report.find('\n', at)) << report;
}

TEST(SlicedGroups, WhereMaskedCausalAttentionMatchesTheInterpreter) {
  Attention a = where_masked_attention(2, 300, 16, 0);  // 300 rows in chunks of 32: the last one shifted back
  auto cpu = check_against_interpreter(a.g, {a.out}, a.inputs, sliced(32));
  expect_where_sliced(*cpu);
}

TEST(SlicedGroups, WhereMaskedSlidingWindowAttentionMatchesTheInterpreter) {
  Attention a = where_masked_attention(3, 70, 8, 9);
  auto cpu = check_against_interpreter(a.g, {a.out}, a.inputs, sliced(16));
  expect_where_sliced(*cpu);
}

TEST(SlicedGroups, WhereBetweenTwoComputedTensorsMatchesTheInterpreter) {
  // Both of where's values computed in the group, its condition from data.
  auto g = std::make_shared<Graph>();
  Tensor x = g->input("x", {Expr(40), Expr(8)});
  Tensor y = g->input("y", {Expr(56), Expr(8)});
  Tensor scores = ops::matmul(x, y.transpose(0, 1));
  Tensor picked = ops::where(ops::gt(scores, ops::full(*g, {Expr(1)}, 0.0)), scores.exp(), scores * 3.0);
  Tensor out = ops::sum(picked, {1});
  std::map<std::string, Array> inputs{{"x", random_array({40, 8}, 14)}, {"y", random_array({56, 8}, 15)}};
  auto cpu = check_against_interpreter(g, {out}, inputs, sliced(16), 1e-4);
  EXPECT_EQ(cpu->stats().at("sliced_groups"), 1);  // the where is inlined into the row sums
}

TEST(SlicedGroups, TheDefaultOptionsSliceLargeWhereMaskedAttention) {
  // As users write causal attention: sliced like scaled_dot_product_attention's.
  Attention a = where_masked_attention(8, 1024, 64, 0);
  Options o;
  o.search.use_cache = false;
  auto cpu = compiled(*a.g, {a.out.edge()}, o);
  cpu->execute(a.inputs, {});
  expect_where_sliced(*cpu);
  EXPECT_LT(cpu->stats().at("arena_bytes"), 16.0 * (1 << 20));  // unsliced: 32 MiB of scores alone
}

TEST(SlicedGroups, SlicingCanBeTurnedOff) {
  Attention a = attention(2, 48, 16, false);
  Options o = sliced(16);
  o.slice.enabled = false;
  auto cpu = check_against_interpreter(a.g, {a.out}, a.inputs, o);
  EXPECT_EQ(cpu->stats().at("sliced_groups"), 0);
}

}  // namespace
}  // namespace lumen
