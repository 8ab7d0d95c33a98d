// Known regions (lumen/kernel/known_region.h) and the affine ranges lowering
// takes from them (lumen/kernel/affine_range.h): the predicates found for
// masks, reductions restricted to the unmasked range (fewer loop iterations,
// counted from the lowered IR), and results equal to the interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "lumen/compile.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/simplify.h"
#include "lumen/kernel/affine_range.h"
#include "lumen/kernel/fusion.h"
#include "lumen/kernel/known_region.h"
#include "lumen/kernel/lower.h"
#include "lumen/kernel/printer.h"
#include "lumen/kernel/schedule_space.h"
#include "lumen/ops/attention.h"
#include "lumen/ops/conv.h"
#include "lumen/ops/creation.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/math.h"
#include "lumen/ops/linalg.h"
#include "lumen/ops/reduce.h"
#include "tests/kernel/ir_terms.h"

namespace lumen {
namespace {

using kernel::Known;
using kernel::KnownRegions;

constexpr double kInf = INFINITY;

// The region of node `t` at its canonical coordinates, as a predicate.
Known region(const Graph& g, const Tensor& t) {
  KnownRegions known(g);
  Known k = kernel::region_of(known.at(t.node_id(), loop_indices(t.shape())));
  k.live = kernel::as_predicate(k.live);
  return k;
}

bool holds(const Expr& predicate, int64_t i, int64_t j) {
  return evaluate(predicate, Bindings{{"i0", i}, {"i1", j}}) != 0;
}

// mask(row, col) for a user-written mask built from arange.
using MaskFn = std::function<Tensor(const Tensor& row, const Tensor& col)>;

Tensor masked_scores(Graph& g, const Tensor& scores, const MaskFn& mask) {
  int64_t sq = scores.shape()[scores.rank() - 2].value(), sk = scores.shape().back().value();
  Tensor row = ops::arange(g, 0, static_cast<double>(sq), 1, DType::I32).reshape({Expr(sq), Expr(1)});
  Tensor col = ops::arange(g, 0, static_cast<double>(sk), 1, DType::I32).reshape({Expr(1), Expr(sk)});
  return ops::where(mask(row, col), g.constant(-kInf), scores);
}

TEST(KnownRegion, CausalWhereIsMinusInfinityAboveTheDiagonal) {
  Graph g;
  Tensor s = g.input("s", {Expr(12), Expr(12)});
  Tensor m = masked_scores(g, s, [](const Tensor& row, const Tensor& col) { return ops::gt(col, row); });
  Known k = region(g, m);
  EXPECT_TRUE(std::isinf(k.value) && k.value < 0);
  for (int64_t i = 0; i < 12; ++i) {
    for (int64_t j = 0; j < 12; ++j) EXPECT_EQ(holds(k.live, i, j), j <= i) << i << ", " << j << ": " << k.live;
  }
}

TEST(KnownRegion, AdditiveMaskAndExpOfIt) {
  Graph g;
  Shape shape{Expr(9), Expr(9)};
  Tensor x = g.input("x", shape);
  Tensor allowed = g.iota(le(loop_index(shape, 1), loop_index(shape, 0)), shape, DType::Bool);
  Tensor y = x + ops::neg_inf_where(ops::logical_not(allowed), DType::F32);  // as scaled_dot_product_attention
  Known ky = region(g, y), ke = region(g, y.exp2());
  EXPECT_TRUE(std::isinf(ky.value) && ky.value < 0);
  EXPECT_EQ(ke.value, 0.0);
  for (int64_t i = 0; i < 9; ++i) {
    for (int64_t j = 0; j < 9; ++j) {
      EXPECT_EQ(holds(ky.live, i, j), j <= i);
      EXPECT_EQ(holds(ke.live, i, j), j <= i);
    }
  }
}

TEST(KnownRegion, PaddingIsZeroOutsideTheValidRegion) {
  Graph g;
  Tensor x = g.input("x", {Expr(5)});
  Known k = region(g, x.pad({{Expr(2), Expr(3)}}).exp2());  // exp2(0) = 1 in the padding
  EXPECT_EQ(k.value, 1.0);
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(evaluate(k.live, Bindings{{"i0", i}}) != 0, i >= 2 && i < 7) << i;
}

TEST(KnownRegion, ZeroTimesInfinityIsNotClaimedZero) {
  Graph g;
  Tensor x = g.input("x", {Expr(8), Expr(8)}), y = g.input("y", {Expr(8), Expr(8)});
  // a = 0 where j > i; b = inf where j < 3: a·b is NaN where both hold, 0 only where a = 0 and b is finite.
  Tensor a = masked_scores(g, x, [](const Tensor& row, const Tensor& col) { return ops::gt(col, row); }).exp2();
  Tensor b = ops::where(ops::lt(ops::arange(g, 0, 8, 1, DType::I32).reshape({Expr(1), Expr(8)}), g.constant(3, DType::I32)),
                        g.constant(kInf), y);
  Known k = region(g, a * b);
  EXPECT_EQ(k.value, 0.0);
  for (int64_t i = 0; i < 8; ++i) {
    for (int64_t j = 0; j < 8; ++j) EXPECT_EQ(holds(k.live, i, j), j <= i || j < 3) << i << ", " << j;
  }
}

TEST(KnownRegion, DataDependentMasksKnowNothing) {
  Graph g;
  Tensor x = g.input("x", {Expr(4), Expr(4)});
  Tensor m = g.input("m", {Expr(4), Expr(4)}, DType::Bool);
  EXPECT_TRUE(region(g, ops::where(m, g.constant(-kInf), x)).live.is_const(1));
}

TEST(AffineRange, CausalWindowAndBandRanges) {
  Expr i = Expr::index("i", Expr(100)), r = Expr::index("r", Expr(100));
  kernel::VarRange causal = kernel::range_of(lt(r, i + 1), r);
  EXPECT_FALSE(causal.lo.defined());
  EXPECT_EQ(simplify(causal.hi), simplify(i + 1));
  kernel::VarRange window = kernel::range_of(logical_and(lt(r, i + 1), lt(i - 8, r)), r);
  EXPECT_EQ(simplify(window.lo), simplify(i - 7));
  EXPECT_EQ(simplify(window.hi), simplify(i + 1));
  kernel::VarRange band = kernel::range_of(logical_not(logical_or(lt(i + 3, r), lt(r, i - 5))), r);
  EXPECT_EQ(simplify(band.lo), simplify(i - 5));
  EXPECT_EQ(simplify(band.hi), simplify(i + 4));
  // Rows i = 6t + u of a 6-row tile share one loop: the union of their ranges.
  Expr t = Expr::index("t", Expr(10)), u = Expr::index("u", Expr(6));
  auto tiled = kernel::live_range(lt(r, min(t * 6 + u, Expr(57)) + 1), r, Expr(58), {{u, Expr(6)}});
  ASSERT_TRUE(tiled.has_value());
  for (int64_t tv = 0; tv < 10; ++tv) {
    EXPECT_EQ(evaluate(tiled->hi, Bindings{{"t", tv}}), std::min<int64_t>(tv * 6 + 5, 57) + 1);
  }
  // Some column of a 16-wide vector is at or below the diagonal.
  Expr c = Expr::index("c", Expr(4)), lane = Expr::index("l", Expr(16));
  Expr any = kernel::exists(lt(c * 16 + lane, i + 1), lane, Expr(16));
  for (int64_t cv = 0; cv < 4; ++cv) {
    for (int64_t iv = 0; iv < 64; ++iv) EXPECT_EQ(evaluate(any, Bindings{{"c", cv}, {"i", iv}}) != 0, cv * 16 <= iv);
  }
}

// Every kernel of the graph's output, lowered with the heuristic schedule: reduction terms in
// total, with the graph's dynamic dims at `dims`.
int64_t program_iterations(const Graph& g, const Bindings& dims = {}) {
  std::vector<Edge> outs;
  for (const NamedOutput& o : g.outputs()) outs.push_back(o.edge);
  kernel::Partition p = kernel::partition(g, outs);
  int64_t total = 0;
  for (NodeId n : p.kernels) {
    kernel::KernelFacts f = kernel::kernel_facts(g, n, p.materialized, kernel::Target{16, 2});
    kernel::Schedule s = kernel::Schedule::from_actions(f.shape, kernel::knob_actions(f, kernel::heuristic_knobs(f)));
    kernel::LoweredKernel k = kernel::lower(g, n, p.materialized, s, "k");
    Bindings env = dims;
    for (const kernel::Kernel& pre : k.pre_kernels) total += testing::reduction_terms(pre.body, env);
    total += testing::reduction_terms(k.kernel.body, env);
  }
  return total;
}

// Causal attention over a dynamic length: `s` itself, or `n` blocks of 16 (as the Llama prefill
// programs' seq_blocks*16), with a bool mask of the visible keys from loop indices, as the Llama
// graph builds it. (A `where` over dynamic dims is a gather whose i32 positions could exceed 2^31,
// so it knows nothing: only the static forms above restrict through it.)
Graph dynamic_attention(bool blocks, bool masked, int64_t d) {
  Graph g;
  Expr s = blocks ? g.dim("n") * 16 : g.dim("s");
  Shape shape{Expr(2), s, Expr(d)};
  Tensor q = g.input("q", shape), k = g.input("k", shape), v = g.input("v", shape);
  std::optional<Tensor> mask;
  if (masked) {
    Shape square{s, s};
    mask = g.iota(le(loop_index(square, 1), loop_index(square, 0)), square, DType::Bool);
  }
  g.mark_output(ops::scaled_dot_product_attention(q, k, v, mask, false, 0.25), "y");
  return g;
}

Graph attention(int64_t s, int64_t d, const MaskFn& mask) {
  Graph g;
  Shape shape{Expr(2), Expr(s), Expr(d)};
  Tensor q = g.input("q", shape), k = g.input("k", shape), v = g.input("v", shape);
  Tensor scores = ops::matmul(q, k.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(d)));
  if (mask) scores = masked_scores(g, scores, mask);
  g.mark_output(ops::matmul(ops::softmax(scores, -1), v), "y");
  return g;
}

MaskFn causal_mask() {
  return [](const Tensor& row, const Tensor& col) { return ops::gt(col, row); };
}

MaskFn window_mask(double w) {
  return [w](const Tensor& row, const Tensor& col) {
    return ops::logical_or(ops::gt(col, row), ops::le(col, row - w));
  };
}

MaskFn band_mask() {
  return [](const Tensor& row, const Tensor& col) {
    return ops::logical_or(ops::gt(col, row + 3.0), ops::lt(col, row - 5.0));
  };
}

TEST(RestrictedReduction, CausalAttentionAddsAboutHalfTheTerms) {
  int64_t full = program_iterations(attention(256, 16, nullptr));
  int64_t causal = program_iterations(attention(256, 16, causal_mask()));
  EXPECT_LT(static_cast<double>(causal), 0.65 * static_cast<double>(full)) << causal << " of " << full;
}

TEST(RestrictedReduction, CausalAttentionOverADynamicLengthAddsAboutHalfTheTerms) {
  for (bool blocks : {false, true}) {
    Bindings dims = blocks ? Bindings{{"n", 16}} : Bindings{{"s", 256}};
    int64_t full = program_iterations(dynamic_attention(blocks, false, 16), dims);
    int64_t causal = program_iterations(dynamic_attention(blocks, true, 16), dims);
    EXPECT_LT(static_cast<double>(causal), 0.65 * static_cast<double>(full)) << causal << " of " << full << (blocks ? " (n*16)" : " (s)");
  }
}

TEST(RestrictedReduction, AWindowAddsOnlyItsWidth) {
  int64_t causal = program_iterations(attention(256, 8, causal_mask()));
  int64_t window = program_iterations(attention(256, 8, window_mask(32)));
  EXPECT_LT(static_cast<double>(window), 0.6 * static_cast<double>(causal)) << window << " of " << causal;
}

TEST(RestrictedReduction, ASumOverAMaskedMaterialisedBufferReadsItsFact) {
  // The masked values are computed by one kernel and summed by another: the
  // consumer's loop still covers only the unmasked range.
  auto build = [](bool masked) {
    Graph g;
    Tensor x = g.input("x", {Expr(64), Expr(64)});
    Tensor m = masked ? masked_scores(g, x, causal_mask()) : x;
    Tensor e = m.exp2();
    g.mark_output(e, "e");
    g.mark_output(e.sum_reduce(1), "s");
    return g;
  };
  EXPECT_LT(static_cast<double>(program_iterations(build(true))), 0.85 * static_cast<double>(program_iterations(build(false))));
}

// Compiles `g` for the cpu and the interpreter, runs both on the same random inputs, compares.
// (A wrong range leaves out or adds whole terms: errors of order 1, far above `tolerance`.)
void expect_matches_interpreter(const Graph& g, uint32_t seed, double tolerance = 1e-5, const Bindings& sizes = {}) {
  CompileOptions cpu_options, interp_options;
  interp_options.backend = Backend::Interp;
  cpu_options.tuning_cache = false;
  Program cpu = compile(g, {}, cpu_options), ref = compile(g, {}, interp_options);
  for (const auto& [dim, value] : sizes) {
    cpu.bind(dim, value);
    ref.bind(dim, value);
  }
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2, 2);
  for (NodeId id : g.input_ids()) {
    const Node& n = g.node(id);
    std::vector<int64_t> dims;
    for (const Expr& e : n.shape) dims.push_back(evaluate(e, sizes));
    Array a(n.dtype, dims);
    for (int64_t i = 0; i < a.numel(); ++i) a.set(i, dist(rng));
    cpu.set(n.name, a);
    ref.set(n.name, a);
  }
  cpu.run();
  ref.run();
  for (const NamedOutput& o : g.outputs()) {
    const Array &got = cpu.get(o.name), &want = ref.get(o.name);
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < got.numel(); ++i) {
      if (std::isinf(want.get(i))) {
        ASSERT_EQ(got.get(i), want.get(i)) << o.name << " element " << i;
        continue;
      }
      ASSERT_NEAR(got.get(i), want.get(i), tolerance * (1 + std::fabs(want.get(i)))) << o.name << " element " << i;
    }
  }
}

// A padded copy of a permuted view (a convolution's output, positions x channels, seen as
// [N, C, H, W], a bias added and a ReLU, padded and copied channels-last): inside the branch
// that runs where the copy is not the padding, the rows are seen over the unpadded range, so the
// read is affine (no carry between the flattened positions and the channels to divide out).
TEST(RestrictedOutput, APaddedCopyOfAPermutedViewReadsWithoutDivisions) {
  Graph g;
  Tensor y = g.input("y", {Expr(1), Expr(1), Expr(784), Expr(128)});  // [N, groups, H·W, C]
  Tensor bias = g.input("bias", {Expr(1), Expr(128), Expr(1), Expr(1)});
  Tensor nchw = ops::relu(y.permute({0, 1, 3, 2}).reshape({Expr(1), Expr(128), Expr(28), Expr(28)}).add(bias));
  Tensor copy = nchw.pad({{Expr(0), Expr(0)}, {Expr(0), Expr(0)}, {Expr(1), Expr(1)}, {Expr(1), Expr(1)}})
                    .permute({0, 2, 3, 1})
                    .buffered();
  g.mark_output(copy.mul(copy.scalar(2)), "out");
  std::vector<Edge> outs{g.outputs()[0].edge};
  kernel::Partition p = kernel::partition(g, outs);
  bool found = false;
  for (NodeId n : p.kernels) {
    if (n != copy.node_id()) continue;
    found = true;
    kernel::KernelFacts f = kernel::kernel_facts(g, n, p.materialized, kernel::Target{16, 2});
    kernel::Schedule s = kernel::Schedule::from_actions(f.shape, kernel::knob_actions(f, kernel::heuristic_knobs(f)));
    std::string text = kernel::to_string(kernel::lower(g, n, p.materialized, s, "k").kernel);
    EXPECT_EQ(text.find('/'), std::string::npos) << text;
    EXPECT_EQ(text.find('%'), std::string::npos) << text;
  }
  EXPECT_TRUE(found);
  expect_matches_interpreter(g, 3);
}

// The heuristic's kernel for `t` in `g`, lowered and printed.
std::string heuristic_kernel_text(const Graph& g, const Tensor& t) {
  std::vector<Edge> outs;
  for (const NamedOutput& o : g.outputs()) outs.push_back(o.edge);
  kernel::Partition p = kernel::partition(g, outs);
  kernel::KernelFacts f = kernel::kernel_facts(g, t.node_id(), p.materialized, kernel::Target{16, 2});
  kernel::Schedule s = kernel::Schedule::from_actions(f.shape, kernel::knob_actions(f, kernel::heuristic_knobs(f)));
  return kernel::to_string(kernel::lower(g, t.node_id(), p.materialized, s, "k").kernel);
}

// A 5 x 5 average pool over padding: its window's taps that read the padding are zero, but a
// window this short runs whole. Restricted to the taps inside the image, the loop's start would
// depend on the output point and the index through the window's views would take a division
// and a remainder per term, which the simplifier cannot bound (26x slower).
TEST(RestrictedReduction, AShortWindowOverPaddingRunsWholeWithAffineReads) {
  Graph g;
  Tensor x = g.input("x", {Expr(2), Expr(3), Expr(20), Expr(20)});
  Tensor y = ops::avg_pool2d(x, {5, 5}, {1, 1}, {2, 2});
  g.mark_output(y, "y");
  std::string text = heuristic_kernel_text(g, y);
  EXPECT_EQ(text.find('/'), std::string::npos) << text;
  EXPECT_EQ(text.find('%'), std::string::npos) << text;
  expect_matches_interpreter(g, 5);
}

// A buffer read through padding is a load that is 0 where it is not valid, with no select
// around it (which the CPU backend wrote as a masked load and then a blend with the same mask).
TEST(RestrictedOutput, APaddedReadOfABufferIsOneMaskedLoad) {
  Graph g;
  Tensor x = g.input("x", {Expr(4), Expr(40)});
  Tensor y = x.pad({{Expr(0), Expr(0)}, {Expr(3), Expr(5)}}).mul(x.scalar(2));
  g.mark_output(y, "y");
  std::string text = heuristic_kernel_text(g, y);
  EXPECT_EQ(text.find("select"), std::string::npos) << text;
  EXPECT_NE(text.find(" if "), std::string::npos) << text;  // the load knows where it is valid
  expect_matches_interpreter(g, 6);
}

TEST(RestrictedReduction, CausalAttentionOverADynamicLengthEqualsTheInterpreter) {
  expect_matches_interpreter(dynamic_attention(false, true, 8), 5, 1e-5, {{"s", 37}});
  expect_matches_interpreter(dynamic_attention(true, true, 16), 6, 1e-5, {{"n", 3}});
}

TEST(RestrictedReduction, CausalWindowAndBandEqualTheInterpreter) {
  expect_matches_interpreter(attention(37, 8, causal_mask()), 1);
  expect_matches_interpreter(attention(64, 16, causal_mask()), 2);
  expect_matches_interpreter(attention(100, 8, window_mask(24)), 3);
  expect_matches_interpreter(attention(50, 8, band_mask()), 4);
}

// Random masks of the affine kinds (causal with an offset, windows, bands,
// their complements' unions) on random shapes, Sq != Sk included, and a
// masked sum read back from a materialised buffer: the cpu equals the interpreter.
TEST(RestrictedReduction, RandomAffineMasksEqualTheInterpreter) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 6; ++trial) {
    int64_t sq = 5 + static_cast<int64_t>(rng() % 60), sk = 5 + static_cast<int64_t>(rng() % 60), d = 1 + static_cast<int64_t>(rng() % 17);
    double lo = static_cast<double>(rng() % 20) - 10, width = static_cast<double>(1 + rng() % 30);
    MaskFn mask = [&](const Tensor& row, const Tensor& col) {
      switch (trial % 3) {
        case 0: return ops::gt(col, row + lo);  // causal, shifted
        case 1: return ops::logical_or(ops::gt(col, row + lo), ops::le(col, row + lo - width));  // window
        default: return ops::logical_or(ops::lt(col * 2.0, row + lo), ops::gt(col, row + width));  // a slanted band
      }
    };
    Graph g;
    Tensor q = g.input("q", {Expr(2), Expr(sq), Expr(d)}), k = g.input("k", {Expr(2), Expr(sk), Expr(d)});
    Tensor v = g.input("v", {Expr(2), Expr(sk), Expr(d)});
    Tensor scores = masked_scores(g, ops::matmul(q, k.transpose(-1, -2)) * 0.25, mask);
    Tensor e = scores.exp2();  // 0 where masked; rows masked everywhere stay finite
    g.mark_output(ops::matmul(e, v), "y");
    g.mark_output(e.sum_reduce(1), "row_sums");
    g.mark_output(scores.max_reduce(1), "row_max");  // -inf for a row masked everywhere
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(sq) + "x" + std::to_string(sk) + "x" + std::to_string(d));
    expect_matches_interpreter(g, static_cast<uint32_t>(trial), 1e-4);
  }
}

}  // namespace
}  // namespace lumen
