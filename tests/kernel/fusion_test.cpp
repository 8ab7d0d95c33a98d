// Fusion (lumen/kernel/fusion.h): which values computed from indices alone
// get a buffer. A mask stays inline (cheap, and its known regions let the
// consumer skip work); a transcendental of positions read once per head
// (rotary embeddings' sin(position * frequency)) is computed once into a
// buffer rather than once per head.
#include <gtest/gtest.h>

#include "lumen/compile.h"
#include "lumen/kernel/fusion.h"
#include "lumen/ops/creation.h"
#include "lumen/ops/conv.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/movement.h"
#include "lumen/ops/math.h"
#include "lumen/ops/normalization.h"

namespace lumen {
namespace {

// x [heads, s, 32] times sin(position * frequency) [s, 32], broadcast over heads.
struct Rotary {
  Graph g;
  Tensor angle_sin, out;
};

void build_rotary(Rotary& r, int64_t heads, int64_t s) {
  Tensor x = r.g.input("x", {Expr(heads), Expr(s), Expr(32)});
  Tensor position = ops::arange(r.g, 0, static_cast<double>(s)).unsqueeze(1);   // [s, 1]
  Tensor frequency = ops::arange(r.g, 0, 32).unsqueeze(0) * -0.25;              // [1, 32]
  r.angle_sin = (position * frequency.exp()).sin();                               // [s, 32]
  r.out = x * r.angle_sin.unsqueeze(0).expand({Expr(heads), Expr(s), Expr(32)});
  r.g.mark_output(r.out, "y");
}

TEST(Fusion, PositionsThroughATranscendentalReadPerHeadGetABuffer) {
  Rotary r;
  build_rotary(r, 12, 64);
  kernel::Partition p = kernel::partition(r.g, {r.out.edge()});
  EXPECT_TRUE(p.materialized[static_cast<size_t>(r.angle_sin.node_id())]);
  // Read once per element (one head), recomputing it inline is as cheap as a buffer.
  Rotary one;
  build_rotary(one, 1, 64);
  kernel::Partition q = kernel::partition(one.g, {one.out.edge()});
  EXPECT_FALSE(q.materialized[static_cast<size_t>(one.angle_sin.node_id())]);
}

TEST(Fusion, MasksFromIndicesStayInline) {
  // scores [heads, s, s] + log2(col <= row): -inf above the diagonal, a known region.
  Graph g;
  const int64_t heads = 12, s = 64;
  Tensor scores = g.input("scores", {Expr(heads), Expr(s), Expr(s)});
  Tensor row = ops::arange(g, 0, static_cast<double>(s)).unsqueeze(1);
  Tensor col = ops::arange(g, 0, static_cast<double>(s)).unsqueeze(0);
  Tensor mask = ops::neg_inf_where(ops::gt(col, row), DType::F32);  // [s, s]
  Tensor out = scores + mask.unsqueeze(0).expand({Expr(heads), Expr(s), Expr(s)});
  g.mark_output(out, "y");
  kernel::Partition p = kernel::partition(g, {out.edge()});
  EXPECT_FALSE(p.materialized[static_cast<size_t>(mask.node_id())]);
  // ... and the result is right either way.
  Program cpu = compile(g, {}, {Backend::Cpu}), ref = compile(g, {}, {Backend::Interp});
  Array x(DType::F32, {heads, s, s});
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(i % 7) - 3);
  for (Program* prog : {&cpu, &ref}) {
    prog->set("scores", x);
    prog->run();
  }
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(cpu.get("y").get(i), ref.get("y").get(i)) << i;
}

// A convolution's output (a contraction, positions x channels) plus its bias, read by the next
// convolution through a padded view: the contraction gets the buffer (its register tile), and
// the bias goes into the padded copy, not the other way round (the contraction inlined into the
// copy, one scalar dot product per padded element).
TEST(Fusion, AContractionReadThroughPaddingIsItsOwnBuffer) {
  Graph g;
  Tensor positions = g.input("x", {196, 32}), weight = g.input("w", {32, 48}), bias = g.input("b", {48});
  Tensor conv = positions.matmul(weight);
  Tensor biased = conv + bias.unsqueeze(0).expand({196, 48});
  Tensor padded = biased.reshape({14, 14, 48}).pad({{1, 1}, {1, 1}, {0, 0}}).contiguous();
  g.mark_output(padded, "y");
  kernel::Partition p = kernel::partition(g, {padded.edge()});
  EXPECT_TRUE(p.materialized[static_cast<size_t>(conv.node_id())]);
  EXPECT_FALSE(p.materialized[static_cast<size_t>(biased.node_id())]);
  Program cpu = compile(g, {}, {Backend::Cpu}), ref = compile(g, {}, {Backend::Interp});
  const std::vector<std::pair<std::string, std::vector<int64_t>>> inputs = {{"x", {196, 32}}, {"w", {32, 48}}, {"b", {48}}};
  for (Program* prog : {&cpu, &ref}) {
    for (const auto& [name, shape] : inputs) {
      Array a(DType::F32, shape);
      for (int64_t i = 0; i < a.numel(); ++i) a.set(i, static_cast<double>((i * 7 + name[0]) % 11) - 5);
      prog->set(name, a);
    }
    prog->run();
  }
  for (int64_t i = 0; i < 16 * 16 * 48; ++i) ASSERT_EQ(cpu.get("y").get(i), ref.get("y").get(i)) << i;
}

// A matmul whose epilogue reads it twice (a hardswish, x·relu6(x + 3)/6) and whose output the next
// kernel reads through windows (a depthwise conv's taps): the matmul is no buffer of its own, its
// epilogue is computed in the same kernel from the accumulators; a second reader of the epilogue's
// input in another kernel keeps the matmul a buffer.
TEST(Fusion, AContractionReadTwiceByOneEpilogueIsThatKernel) {
  auto build = [](Graph& g, bool second_reader) {
    Tensor positions = g.input("x", {196, 32}), weight = g.input("w", {32, 48});
    Tensor conv = positions.matmul(weight);
    Tensor y = conv * ops::clamp(conv + 3.0, 0.0, 6.0) * (1.0 / 6);
    Tensor windows = y.reshape({14, 14, 48}).pad({{1, 1}, {1, 1}, {0, 0}}).unfold(0, 3, 1, 1).unfold(2, 3, 1, 1);
    Tensor taps = windows.sum_reduce(3).sum_reduce(1);  // [14, 14, 48]: sums of the 3 x 3 windows
    g.mark_output(taps, "y");
    if (second_reader) g.mark_output(conv.sum_reduce(1), "s");
    return conv;
  };
  Graph g, h;
  Tensor conv = build(g, false), shared = build(h, true);
  kernel::Partition p = kernel::partition(g, {g.outputs()[0].edge});
  EXPECT_FALSE(p.materialized[static_cast<size_t>(conv.node_id())]);
  kernel::Partition q = kernel::partition(h, {h.outputs()[0].edge, h.outputs()[1].edge});
  EXPECT_TRUE(q.materialized[static_cast<size_t>(shared.node_id())]);
  Program cpu = compile(g, {}, {Backend::Cpu}), ref = compile(g, {}, {Backend::Interp});
  for (Program* prog : {&cpu, &ref}) {
    for (const auto& [name, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{{"x", {196, 32}}, {"w", {32, 48}}}) {
      Array a(DType::F32, shape);
      for (int64_t i = 0; i < a.numel(); ++i) a.set(i, 0.25 * static_cast<double>((i * 7 + name[0]) % 11) - 1.25);
      prog->set(name, a);
    }
    prog->run();
  }
  Array got = cpu.get("y"), want = ref.get("y");
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.get(i), want.get(i), 1e-4 * (1 + std::abs(want.get(i)))) << i;
}

using NamedShapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// Whether `g`'s partition gives a sum (a conv's contraction) a buffer of its own.
bool a_sum_has_a_kernel(const Graph& g) {
  kernel::Partition p = kernel::partition(g, {g.outputs()[0].edge});
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    if (g.nodes()[i].op == Op::SumReduce && p.materialized[i]) return true;
  }
  return false;
}

// Output y of `g` compiled for the CPU against the interpreter's, on the same inputs (a `var` kept positive).
void expect_cpu_like_the_interpreter(const Graph& g, const NamedShapes& inputs) {
  Program cpu = compile(g, {}, {Backend::Cpu}), ref = compile(g, {}, {Backend::Interp});
  for (Program* prog : {&cpu, &ref}) {
    for (const auto& [name, shape] : inputs) {
      Array a(DType::F32, shape);
      for (int64_t i = 0; i < a.numel(); ++i) a.set(i, 0.125 * static_cast<double>((i * 5 + name[0]) % 13) + (name == "var" ? 0.5 : -0.75));
      prog->set(name, a);
    }
    prog->run();
  }
  Array got = cpu.get("y"), want = ref.get("y");
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.get(i), want.get(i), 1e-4 * (1 + std::abs(want.get(i)))) << i;
}

// A conv, a batch norm and a ReLU under a max pool with padding (resnet's stem, as torch.compile
// hands it over): the max pool adds its -inf border to the values, an elementwise pass over the
// padded points. The conv is a kernel of its own (a register tile); inlined into that pass, it was
// computed point by point without one (resnet18 through torch.compile: 159 ms against 17 ms).
TEST(Fusion, AConvUnderAPaddedMaxPoolIsAKernelOfItsOwn) {
  Graph g;
  Tensor x = g.input("x", {1, 3, 32, 32}), w = g.parameter("w", {32, 3, 7, 7});
  Tensor mean = g.parameter("mean", {32}), var = g.parameter("var", {32}), scale = g.parameter("scale", {32}),
         shift = g.parameter("shift", {32});
  Tensor y = ops::max_pool2d(ops::relu(ops::batch_norm(ops::conv2d(x, w, std::nullopt, {2, 2}, {3, 3}), mean, var,
                                                       scale, shift)),
                             {3, 3}, {2, 2}, {1, 1});
  g.mark_output(y, "y");
  EXPECT_TRUE(a_sum_has_a_kernel(g));
  expect_cpu_like_the_interpreter(
      g, {{"x", {1, 3, 32, 32}}, {"w", {32, 3, 7, 7}}, {"mean", {32}}, {"var", {32}}, {"scale", {32}}, {"shift", {32}}});
}

// A ViT's patch embedding: a 4x4/4 conv, flattened to tokens and put after a class token's row
// (a concat: a sum of padded views) plus position embeddings. The conv is a kernel of its own
// (a register tile); inlined into the concat's pass through the flattening view, each token's
// channel was a dot product of its own (ViT-B/16's 3.4 ms against 1.1 ms).
TEST(Fusion, AConvFlattenedUnderAConcatIsAKernelOfItsOwn) {
  Graph g;
  Tensor x = g.input("x", {1, 3, 16, 16}), w = g.parameter("w", {64, 3, 4, 4});
  Tensor cls = g.parameter("cls", {1, 1, 64}), pos = g.parameter("pos", {1, 17, 64});
  Tensor patches = ops::conv2d(x, w, std::nullopt, {4, 4}).reshape({1, 64, 16}).permute({0, 2, 1});
  Tensor y = ops::concat({cls, patches}, 1) + pos;
  g.mark_output(y, "y");
  EXPECT_TRUE(a_sum_has_a_kernel(g));
  expect_cpu_like_the_interpreter(g, {{"x", {1, 3, 16, 16}}, {"w", {64, 3, 4, 4}}, {"cls", {1, 1, 64}}, {"pos", {1, 17, 64}}});
}

}  // namespace
}  // namespace lumen
