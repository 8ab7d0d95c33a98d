// The schedule space (lumen/kernel/schedule_space.h): the heuristic point and
// every legal neighbour of it compile and agree with the interpreter, for the
// kernels whose schedules matter most (matrix-vector products in f32 and
// dequantised 8-bit, a matmul, a row softmax, a convolution, causal attention).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "lumen/backend/cpu/isa.h"
#include "lumen/compile.h"
#include "lumen/core/tensor.h"
#include "lumen/kernel/fusion.h"
#include "lumen/kernel/lower.h"
#include "lumen/kernel/printer.h"
#include "lumen/kernel/schedule_space.h"
#include "lumen/io/weight_store.h"
#include "lumen/ops/conv.h"
#include "lumen/ops/math.h"
#include "lumen/ops/attention.h"
#include "lumen/ops/movement.h"
#include "lumen/ops/reduce.h"
#include "lumen/backend/cpu/cpu_backend.h"
#include "lumen/compiler/compiler.h"
#include "lumen/runtime/compiled_executor.h"
#include "tests/runtime/against_interpreter.h"

namespace lumen {
namespace {

struct Case {
  Graph g;
  std::map<std::string, Array> inputs;
};

Array filled(DType dtype, std::vector<int64_t> dims, double scale) {
  Array a(dtype, dims);
  for (int64_t i = 0; i < a.numel(); ++i) {
    double v = std::sin(static_cast<double>(i) * 0.37 + 0.1);
    a.set(i, dtype == DType::I8 ? std::round(v * 127) : v * scale);
  }
  return a;
}

// y[n] = sum_k x[k] * w[n, k]: a decode step's projection.
Case matvec(bool quantized) {
  Case c;
  const int64_t n = 64, k = 256;
  Tensor x = c.g.input("x", {Expr(1), Expr(k)});
  Tensor w;
  if (quantized) {  // Q8_0-like: 8-bit values, one f16 scale per 32
    Tensor q = c.g.input("q", {Expr(n), Expr(k)}, DType::I8);
    Tensor s = c.g.input("s", {Expr(n), Expr(k / 32)}, DType::F16);
    Tensor scale = s.cast(DType::F32).reshape({Expr(n), Expr(k / 32), Expr(1)}).expand({Expr(n), Expr(k / 32), Expr(32)})
                       .reshape({Expr(n), Expr(k)});
    w = q.cast(DType::F32) * scale;
    c.inputs["q"] = filled(DType::I8, {n, k}, 1);
    c.inputs["s"] = filled(DType::F16, {n, k / 32}, 0.01);
  } else {
    w = c.g.input("w", {Expr(n), Expr(k)});
    c.inputs["w"] = filled(DType::F32, {n, k}, 1);
  }
  c.g.mark_output(x.matmul(w.transpose(0, 1)), "y");
  c.inputs["x"] = filled(DType::F32, {1, k}, 1);
  return c;
}

// y[n] = sum_k x[k] * w[n, k] with w's 4-bit quants two a byte (Q4_1 as the GGUF
// reader keeps it): each byte holds element j and element 16 + j of its block.
Case matvec_nibbles() {
  Case c;
  const int64_t n = 64, k = 256;
  io::StoredWeight w;
  w.format = io::WeightFormat::Q4_1;
  w.shape = {n, k};
  w.packed_half = 16;
  w.data = Array(DType::U8, {n, k / 2});
  for (int64_t i = 0; i < w.data.numel(); ++i) w.data.set(i, static_cast<double>((i * 37 + 11) % 256));
  w.scales = filled(DType::F16, {n, k / 32}, 0.01);
  w.mins = filled(DType::F16, {n, k / 32}, 0.1);
  Tensor x = c.g.input("x", {Expr(1), Expr(k)});
  c.g.mark_output(x.matmul(io::dequantize(c.g, "w", w, DType::F32).transpose(0, 1)), "y");
  c.inputs["w.q"] = w.data;
  c.inputs["w.scales"] = w.scales;
  c.inputs["w.mins"] = w.mins;
  c.inputs["x"] = filled(DType::F32, {1, k}, 1);
  return c;
}

Case matmul(int64_t m = 24, int64_t n = 64) {
  Case c;
  Tensor a = c.g.input("a", {Expr(m), Expr(48)}), b = c.g.input("b", {Expr(48), Expr(n)});
  c.g.mark_output(a.matmul(b), "y");
  c.inputs["a"] = filled(DType::F32, {m, 48}, 1);
  c.inputs["b"] = filled(DType::F32, {48, n}, 1);
  return c;
}

Case softmax_rows() {
  Case c;
  Tensor x = c.g.input("x", {Expr(8), Expr(64)});
  c.g.mark_output(ops::softmax(x * 3.0, -1), "y");
  c.inputs["x"] = filled(DType::F32, {8, 64}, 1);
  return c;
}

// Causal attention: the mask is index arithmetic (vectorised along the lane),
// masked scores are -inf and their exp must be exactly 0.
Case causal_attention() {
  Case c;
  Shape s{Expr(2), Expr(48), Expr(32)};
  Tensor q = c.g.input("q", s), k = c.g.input("k", s), v = c.g.input("v", s);
  c.g.mark_output(ops::scaled_dot_product_attention(q, k, v, std::nullopt, true, std::nullopt, false), "y");
  for (const char* n : {"q", "k", "v"}) c.inputs[n] = filled(DType::F32, {2, 48, 32}, 1);
  return c;
}

// A 3x3 convolution with padding: a contraction over C·3·3 whose window
// index takes r / 9, r / 3 % 3 and r % 3 of the reduction variable.
Case conv3x3(int64_t channels = 8, int64_t out = 32, int64_t h = 10, int64_t w = 12) {
  Case c;
  Tensor x = c.g.input("x", {Expr(1), Expr(channels), Expr(h), Expr(w)});
  Tensor k = c.g.input("w", {Expr(out), Expr(channels), Expr(3), Expr(3)});
  c.g.mark_output(ops::conv2d(x, k, std::nullopt, {1, 1}, {1, 1}, {1, 1}, 1), "y");
  c.inputs["x"] = filled(DType::F32, {1, channels, h, w}, 1);
  c.inputs["w"] = filled(DType::F32, {out, channels, 3, 3}, 1);
  return c;
}

// Sums of everything: too few outputs (one) to share among threads, so the
// reduction itself is cut into parts (rfactor).
Case sum_all(bool max) {
  Case c;
  Tensor x = c.g.input("x", {Expr(512), Expr(512)});
  c.g.mark_output(max ? ops::amax(x, {}, false) : ops::sum(x, {}, false), "y");
  c.inputs["x"] = filled(DType::F32, {512, 512}, 1);
  return c;
}

// Root-mean-square of three long rows: a reduction under an epilogue.
Case rms_of_few_rows() {
  Case c;
  Tensor x = c.g.input("x", {Expr(3), Expr(131072)});
  c.g.mark_output((ops::mean(x * x, {-1}, false) + 1e-6).sqrt(), "y");
  c.inputs["x"] = filled(DType::F32, {3, 131072}, 1);
  return c;
}

// A sum down the columns of a matrix: the reduction strides through memory.
Case column_sum() {
  Case c;
  Tensor x = c.g.input("x", {Expr(2048), Expr(256)});
  c.g.mark_output(ops::sum(x, {0}, false), "y");
  c.inputs["x"] = filled(DType::F32, {2048, 256}, 1);
  return c;
}

// A transposed copy with an epilogue: the output's last dim strides through the input.
Case transpose_copy(int64_t rows = 64) {
  Case c;
  Tensor x = c.g.input("x", {Expr(rows), Expr(96)});
  // (The elementwise chain is recorded in x's order (core/layout.h); the copy out reads it transposed.)
  c.g.mark_output((x.transpose(0, 1) * 2.0 + 3.0).sqrt().contiguous(), "y");
  c.inputs["x"] = filled(DType::F32, {rows, 96}, 1);
  return c;
}

// Per-channel means over batch and positions (batch-norm statistics): the
// reduction over positions runs inside the one over the batch.
Case channel_means() {
  Case c;
  Tensor x = c.g.input("x", {Expr(6), Expr(8), Expr(6), Expr(32)});
  c.g.mark_output(ops::mean(x, {0, 2, 3}, false), "y");
  c.inputs["x"] = filled(DType::F32, {6, 8, 6, 32}, 1);
  return c;
}

// A mean of squares over 14 x 14 positions stored in rows of 18 (mobilenet_v3's
// SE pools read a depthwise conv's output computed over padded rows): the
// reduction's index takes r / 14 and r % 14.
Case pool_over_padded_rows(int64_t n = 14, int64_t row = 18) {
  Case c;
  Tensor x = c.g.input("x", {Expr(24), Expr(n), Expr(row)});
  Tensor v = x.slice(2, Expr(0), Expr(n));
  c.g.mark_output(ops::mean(v * v, {1, 2}, false), "y");
  c.inputs["x"] = filled(DType::F32, {24, n, row}, 1);
  return c;
}

// Row maxima and sums over 100 elements, all negative: 100 is not a multiple
// of the SIMD width, and the masked lanes must count as -inf for the max.
Case odd_rows() {
  Case c;
  Tensor x = c.g.input("x", {Expr(8), Expr(100)});
  c.g.mark_output(ops::amax(x, {-1}, false) + ops::sum(x, {-1}, false), "y");
  Array a = filled(DType::F32, {8, 100}, 1);
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, a.get(i) - 3.0);
  c.inputs["x"] = a;
  return c;
}

// The text of a kernel's loop IR.
std::string lowered_text(const Case& c, const kernel::Knobs& k, const kernel::KernelFacts& f) {
  NodeId out = c.g.outputs().at(0).edge.node;
  std::vector<bool> materialized(c.g.size(), false);
  for (size_t i = 0; i < c.g.size(); ++i) materialized[i] = c.g.nodes()[i].op == Op::Input;
  materialized[static_cast<size_t>(out)] = true;
  kernel::Schedule s = kernel::Schedule::from_actions(f.shape, kernel::knob_actions(f, k));
  return kernel::to_string(kernel::lower(c.g, out, materialized, s, "k").kernel);
}

// A CPU program whose kernels are scheduled by `chooser` instead of the search.
std::unique_ptr<Executor> scheduled_executor(const Graph& g, const std::vector<Edge>& edges,
                                             compiler::ScheduleChooser chooser) {
  compiler::CompilerOptions options;
  options.choose = std::move(chooser);
  return std::make_unique<CompiledExecutor>(compiler::compile(g, edges, options, cpu::CpuBackend::shared()).program);
}

// Runs the case with every kernel scheduled as `pick` says; checks against the interpreter.
void check(Case& c, const std::function<std::vector<kernel::Action>(const kernel::KernelFacts&)>& pick,
           const std::string& what) {
  auto shared = std::make_shared<const Graph>(c.g);
  kernel::Target target{cpu::host_isa().f32_lanes(), 2};
  auto chooser = [&](const Graph& g, NodeId n, const std::vector<bool>& materialized) {
    return pick(kernel::kernel_facts(g, n, materialized, target));
  };
  std::vector<NamedOutput> named;
  std::vector<Edge> edges;
  for (const NamedOutput& o : c.g.outputs()) {
    named.push_back(o);
    edges.push_back(o.edge);
  }
  Program cpu(shared, named, scheduled_executor(*shared, edges, chooser));
  auto [got, want] = run_against_interpreter(cpu, c.g, c.inputs, "y");
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i) {
    ASSERT_NEAR(got.get(i), want.get(i), 1e-3 + 1e-4 * std::fabs(want.get(i))) << what << ", element " << i;
  }
}

void check_heuristic_and_neighbours(Case c) {
  check(c, [](const kernel::KernelFacts& f) { return kernel::knob_actions(f, kernel::heuristic_knobs(f)); },
        "heuristic");
  // Neighbour i of each kernel's heuristic point, for every i some kernel has.
  for (size_t i = 0; i < 40; ++i) {
    bool any = false;
    std::string tried;
    auto pick = [&](const kernel::KernelFacts& f) {
      kernel::Knobs base = kernel::heuristic_knobs(f);
      std::vector<kernel::Knobs> near = kernel::neighbours(f, base);
      if (i >= near.size()) return kernel::knob_actions(f, base);
      try {
        std::vector<kernel::Action> actions = kernel::knob_actions(f, near[i]);
        any = true;
        tried += near[i].to_string() + "; ";
        return actions;
      } catch (const Error&) {  // an illegal point: the search prunes it
        return kernel::knob_actions(f, base);
      }
    };
    check(c, pick, "neighbour " + std::to_string(i));
    if (testing::Test::HasFatalFailure()) {
      ADD_FAILURE() << "schedules: " << tried;
      return;
    }
    if (!any && i > 12) break;
  }
}

kernel::KernelFacts output_facts(const Case& c, int lanes) {
  NodeId out = c.g.outputs().at(0).edge.node;
  std::vector<bool> materialized(c.g.size(), false);
  for (size_t i = 0; i < c.g.size(); ++i) materialized[i] = c.g.nodes()[i].op == Op::Input;
  materialized[static_cast<size_t>(out)] = true;
  return kernel::kernel_facts(c.g, out, materialized, kernel::Target{lanes, 2});
}

TEST(ScheduleSpace, MatvecRowsAreUnrolledByTheHeuristic) {
  kernel::KernelFacts f = output_facts(matvec(false), 16);
  EXPECT_EQ(kernel::heuristic_knobs(f).rows, 4) << kernel::heuristic_knobs(f).to_string();
}

// 100 rows: a 6-row tile overhangs by 2 rows (clamped, computed twice).
TEST(ScheduleSpace, UnevenRowTileIsTheHeuristicAndCorrect) {
  Case c = matmul(100);
  kernel::KernelFacts f = output_facts(c, 16);
  EXPECT_EQ(kernel::heuristic_knobs(f).mr, 6) << kernel::heuristic_knobs(f).to_string();
  check_heuristic_and_neighbours(std::move(c));
}

// 49 rows (a convolution over 7 x 7 positions): 6-row tiles, the last
// overhanging by 5 rows (10% more work), not 2-row tiles of 8 accumulators.
TEST(ScheduleSpace, FortyNineRowsTakeSixRowTiles) {
  Case c = matmul(49);
  kernel::KernelFacts f = output_facts(c, 16);
  EXPECT_EQ(kernel::heuristic_knobs(f).mr, 6) << kernel::heuristic_knobs(f).to_string();
  EXPECT_EQ(kernel::heuristic_knobs(output_facts(matmul(10), 16)).mr, 2);  // 12 rows for 10 is too many
  check_heuristic_and_neighbours(std::move(c));
}

TEST(ScheduleSpace, OnlyAStaticDimsFirstSplitMayLeaveARemainder) {
  kernel::Schedule s({Expr(100), Expr(64)});
  s.apply(kernel::Action::split(0, 6));  // 17 x 6, the last tile overhangs
  EXPECT_EQ(s.loops()[0].extent.value(), 17);
  EXPECT_THROW(s.apply(kernel::Action::split(0, 4)), Error);  // 17 is not split again unevenly
  EXPECT_THROW(s.apply(kernel::Action::split(1, 4)), Error);  // nor is the 6 inside it
  s.apply(kernel::Action::split(2, 48));                       // 64 = 2 x 48, overhanging by 32
  EXPECT_EQ(s.loops()[2].extent.value(), 2);
}

// The contraction kernel of a case as the fusion pass cuts it.
struct Contraction {
  std::vector<bool> materialized;
  NodeId node = -1;
};
Contraction contraction_kernel(const Case& c) {
  std::vector<Edge> outs;
  for (const NamedOutput& o : c.g.outputs()) outs.push_back(o.edge);
  Contraction k;
  k.materialized = kernel::partition(c.g, outs).materialized;
  for (NodeId n = 0; n < static_cast<NodeId>(c.g.size()); ++n) {
    if (k.materialized[static_cast<size_t>(n)] && kernel::contraction_of(c.g, n, k.materialized) >= 0) k.node = n;
  }
  return k;
}

TEST(ScheduleSpace, ConvolutionReductionSplitsIntoChannelsAndWindow) {
  Case c = conv3x3();
  Contraction k = contraction_kernel(c);
  ASSERT_GE(k.node, 0) << "the convolution's contraction is its own kernel (read transposed by the output)";
  kernel::KernelFacts f = kernel::kernel_facts(c.g, k.node, k.materialized, kernel::Target{16, 2});
  ASSERT_FALSE(f.reduce_splits.empty());
  EXPECT_EQ(f.reduce_splits.back(), 9);
  kernel::Knobs h = kernel::heuristic_knobs(f);
  EXPECT_EQ(h.reduce_split, 9) << h.to_string();
  EXPECT_EQ(h.nr, 32) << "output channels are the SIMD dim: " << h.to_string();
  // Split, the window index uses the inner loop variable only through constants.
  kernel::Schedule s = kernel::Schedule::from_actions(f.shape, kernel::knob_actions(f, h));
  kernel::LoweredKernel lk = kernel::lower(c.g, k.node, k.materialized, s, "k");
  std::function<bool(const kernel::Block&)> has_split = [&](const kernel::Block& b) {
    for (const kernel::Stmt& st : b) {
      if (st.kind != kernel::StmtKind::Loop) continue;
      if (st.var.name() == "r0_i" && st.extent.is_const(9) && st.unroll_hint == 9) return true;
      if (has_split(st.body)) return true;
    }
    return false;
  };
  EXPECT_TRUE(has_split(lk.kernel.body));
  check_heuristic_and_neighbours(std::move(c));
}

// A product summed over two of its axes at once (Winograd's tile transform, 16 coefficients times
// a tile's 4 x 4 inputs, after the graph passes merge its two sums into one over a reshaped view)
// is a contraction whose operand can be packed before the kernel, but not inline (the inline panel
// takes one summed axis of the product): no such point is offered, and the heuristic and its
// neighbours compute what the interpreter does. (An inline pack of it crashed the search.)
TEST(ScheduleSpace, AContractionOverTwoAxesIsNotPackedInline) {
  Case c;
  Tensor a = c.g.input("a", {Expr(48), Expr(4), Expr(4), Expr(1)});
  Tensor b = c.g.input("b", {Expr(1), Expr(4), Expr(4), Expr(64)});
  c.g.mark_output(a.mul(b).reshape({Expr(48), Expr(16), Expr(64)}).sum_reduce(1), "y");  // [48, 64]
  c.inputs["a"] = filled(DType::F32, {48, 4, 4, 1}, 1);
  c.inputs["b"] = filled(DType::F32, {1, 4, 4, 64}, 2);
  Contraction k = contraction_kernel(c);
  ASSERT_GE(k.node, 0);
  kernel::KernelFacts f = kernel::kernel_facts(c.g, k.node, k.materialized, kernel::Target{16, 2});
  EXPECT_FALSE(f.one_sum_axis);
  kernel::Knobs h = kernel::heuristic_knobs(f);
  for (const kernel::Knobs& n : kernel::neighbours(f, h)) EXPECT_FALSE(n.pack_inline) << n.to_string();
  kernel::Knobs inline_pack = h;
  inline_pack.nr = inline_pack.nr > 0 ? inline_pack.nr : 16;
  inline_pack.pack = inline_pack.pack_inline = true;
  EXPECT_THROW(kernel::knob_actions(f, inline_pack), Error);
  check_heuristic_and_neighbours(std::move(c));
}

// A 512-channel 3x3 convolution at 7 x 7: the packed K x nr panel (K = 4608)
// is 1.2 MB at nr = 64, more than a 1 MB L2, so the tile narrows to two
// vectors (590 KB) and takes 7 rows, which divide the 49 positions.
TEST(ScheduleSpace, APanelLargerThanL2NarrowsTheTile) {
  Case c = conv3x3(512, 512, 7, 7);
  Contraction k = contraction_kernel(c);
  ASSERT_GE(k.node, 0);
  auto knobs_for = [&](int64_t l2) {
    kernel::Target t{16, 2};
    t.l2_bytes = l2;
    return kernel::heuristic_knobs(kernel::kernel_facts(c.g, k.node, k.materialized, t));
  };
  kernel::Knobs small = knobs_for(int64_t{1} << 20), big = knobs_for(int64_t{2} << 20), unknown = knobs_for(0);
  EXPECT_EQ(small.nr, 32) << small.to_string();
  EXPECT_EQ(small.mr, 7) << small.to_string();
  EXPECT_EQ(big.nr, 64) << big.to_string();
  EXPECT_EQ(unknown.nr, 64) << unknown.to_string();
  EXPECT_EQ(unknown.mr, 6) << unknown.to_string();
  // The narrowed 7-row tile computes the right thing (a 16-channel one, its
  // 36 KB panel over a 16 KB "L2").
  Case small_conv = conv3x3(16, 64, 7, 7);
  bool narrowed = false;
  check(small_conv, [&](kernel::KernelFacts f) {
    f.l2_bytes = 16 << 10;
    kernel::Knobs h = kernel::heuristic_knobs(f);
    if (h.nr == 2 * f.lanes && h.mr == 7) narrowed = true;
    return kernel::knob_actions(f, h);
  }, "narrowed tile");
  EXPECT_TRUE(narrowed);
}

// Few rows that seven divides (a 7 x 7 map's 49 positions, a 7-row depthwise conv) take
// seven-row tiles: three vectors wide where three divide the columns, narrower where no other
// row count tiles the rows; many rows keep six.
TEST(ScheduleSpace, FewRowsOfSevensTakeSevenRowTiles) {
  auto batched = [](int64_t batch, int64_t m, int64_t n) {  // [batch, m, 48] x [48, n]
    Case c;
    Tensor a = c.g.input("a", {Expr(batch), Expr(m), Expr(48)}), b = c.g.input("b", {Expr(48), Expr(n)});
    c.g.mark_output(a.matmul(b), "y");
    c.inputs["a"] = filled(DType::F32, {batch, m, 48}, 1);
    c.inputs["b"] = filled(DType::F32, {48, n}, 1);
    return c;
  };
  auto knobs_for = [&](int64_t batch, int64_t m, int64_t n) {
    Case c = batched(batch, m, n);
    Contraction k = contraction_kernel(c);
    EXPECT_GE(k.node, 0);
    return kernel::heuristic_knobs(kernel::kernel_facts(c.g, k.node, k.materialized, kernel::Target{16, 2}));
  };
  kernel::Knobs positions = knobs_for(1, 49, 576), rows = knobs_for(4, 7, 64), wide = knobs_for(1, 49, 512),
                many = knobs_for(1, 196 * 7, 576);
  EXPECT_EQ(positions.mr, 7) << positions.to_string();
  EXPECT_EQ(positions.nr, 48) << positions.to_string();
  EXPECT_EQ(rows.mr, 7) << rows.to_string();
  EXPECT_EQ(rows.nr, 32) << rows.to_string();
  EXPECT_EQ(wide.mr, 6) << wide.to_string();  // three vectors do not divide 512; six rows tile 49
  EXPECT_EQ(wide.nr, 64) << wide.to_string();
  EXPECT_EQ(many.mr, 6) << many.to_string();
  Case c = batched(4, 7, 64);
  check(c, [](const kernel::KernelFacts& f) { return kernel::knob_actions(f, kernel::heuristic_knobs(f)); },
        "seven-row tile");
}

// Columns the lanes do not divide (ViT's 197 keys; 100 here, and 1,000 classes) take a register
// tile over a packed operand: its panels hold zeros past N and the last tile's stores are masked.
// The heuristic and every neighbour (other panel widths, rows, orders, inline packing) match the
// interpreter, a bias read at the overhanging columns included.
TEST(ScheduleSpace, ColumnsTheLanesDoNotDivideTakeATile) {
  for (int64_t n : {100, 1000}) {
    Case c;
    Tensor a = c.g.input("a", {Expr(2), Expr(37), Expr(64)}), b = c.g.input("b", {Expr(2), Expr(n), Expr(64)});
    Tensor bias = c.g.input("bias", {Expr(n)});
    c.g.mark_output(a.matmul(b.permute({0, 2, 1})) + bias, "y");
    c.inputs["a"] = filled(DType::F32, {2, 37, 64}, 1);
    c.inputs["b"] = filled(DType::F32, {2, n, 64}, 2);
    c.inputs["bias"] = filled(DType::F32, {n}, 3);
    Contraction k = contraction_kernel(c);
    ASSERT_GE(k.node, 0);
    kernel::KernelFacts f = kernel::kernel_facts(c.g, k.node, k.materialized, kernel::Target{16, 2});
    EXPECT_TRUE(f.tileable);
    EXPECT_TRUE(f.tile_overhangs);
    kernel::Knobs h = kernel::heuristic_knobs(f);
    EXPECT_GT(h.nr, 0) << h.to_string();
    EXPECT_TRUE(h.pack) << h.to_string();
    EXPECT_EQ(h.nr, n == 100 ? 16 : 64) << h.to_string();  // 100 columns: one vector (112 computed)
    check_heuristic_and_neighbours(c);
  }
}

// 128 rows in six-row tiles compute 132: eight-row tiles three vectors wide where three vectors
// divide the columns; 256 rows (258 computed) and 512 columns (no three-vector panels) keep six.
TEST(ScheduleSpace, RowsSixWouldPadTakeEightRowTiles) {
  auto knobs_for = [](int64_t m, int64_t n) {
    Case c;
    Tensor a = c.g.input("a", {Expr(m), Expr(96)}), b = c.g.input("b", {Expr(96), Expr(n)});
    c.g.mark_output(a.matmul(b), "y");
    c.inputs["a"] = filled(DType::F32, {m, 96}, 1);
    c.inputs["b"] = filled(DType::F32, {96, n}, 1);
    Contraction k = contraction_kernel(c);
    EXPECT_GE(k.node, 0);
    return std::make_pair(kernel::heuristic_knobs(kernel::kernel_facts(c.g, k.node, k.materialized, kernel::Target{16, 2})),
                          c);
  };
  auto [eight, c] = knobs_for(128, 768);
  EXPECT_EQ(eight.mr, 8) << eight.to_string();
  EXPECT_EQ(eight.nr, 48) << eight.to_string();
  kernel::Knobs many = knobs_for(256, 768).first, wide = knobs_for(128, 512).first;
  EXPECT_EQ(many.mr, 6) << many.to_string();
  EXPECT_EQ(many.nr, 64) << many.to_string();
  EXPECT_EQ(wide.mr, 6) << wide.to_string();
  EXPECT_EQ(wide.nr, 64) << wide.to_string();
  check(c, [](const kernel::KernelFacts& f) { return kernel::knob_actions(f, kernel::heuristic_knobs(f)); },
        "eight-row tile");
}

// pack_inline: the panels are made inside the kernel by the thread that reads
// them (no pre-kernel), and a schedule whose threads would share a panel is refused.
TEST(ScheduleSpace, PackInlineMakesPanelsInsideTheKernel) {
  Case c = matmul(24);
  Contraction k = contraction_kernel(c);
  ASSERT_GE(k.node, 0);
  kernel::KernelFacts f = kernel::kernel_facts(c.g, k.node, k.materialized, kernel::Target{16, 2});
  kernel::Knobs h = kernel::heuristic_knobs(f);
  h.nr = 16;  // four column panels for the two threads
  h.n_outer = true;  // the panels outermost (the heuristic runs K = 48 m-outer)
  h.pack = true;
  h.pack_inline = true;
  kernel::Schedule s = kernel::Schedule::from_actions(f.shape, kernel::knob_actions(f, h));
  kernel::LoweredKernel lk = kernel::lower(c.g, k.node, k.materialized, s, "k");
  EXPECT_TRUE(lk.pre_kernels.empty());
  ASSERT_EQ(lk.scratch.size(), 1u);
  bool writes_panel = false;
  for (size_t b = 0; b < lk.buffer_nodes.size(); ++b) writes_panel = writes_panel || (lk.buffer_nodes[b] < 0 && lk.kernel.buffers[b].output);
  EXPECT_TRUE(writes_panel);
  check(c, [&](const kernel::KernelFacts& g) { return kernel::knob_actions(g, h); }, "pack_inline");

  kernel::Knobs rows = h;
  rows.n_outer = false;  // the row tiles outermost: the parallel loop no longer picks the panel
  EXPECT_THROW(kernel::knob_actions(f, rows), Error);
  std::vector<kernel::Action> by_rows = {kernel::Action::pack(1, 16), kernel::Action::pack_inline(1),
                                         kernel::Action::split(1, 16), kernel::Action::set_kind(2, kernel::LoopKind::Vector),
                                         kernel::Action::set_kind(0, kernel::LoopKind::Parallel)};
  EXPECT_THROW(kernel::lower(c.g, k.node, k.materialized, kernel::Schedule::from_actions(f.shape, by_rows), "k"), Error);
  EXPECT_THROW(kernel::Schedule::from_actions(f.shape, {kernel::Action::pack_inline(1)}), Error);  // no pack to make inline
}

TEST(ScheduleSpace, RfactorCutsAReductionWithFewOutputsIntoParallelParts) {
  for (Case c : {sum_all(false), sum_all(true), rms_of_few_rows()}) {
    kernel::KernelFacts f = output_facts(c, 16);
    kernel::Knobs h = kernel::heuristic_knobs(f);
    ASSERT_GT(h.rfactor, 1) << h.to_string();
    EXPECT_EQ(h.parallel, -1);  // the combine is tiny; the parts are the parallel loop
    NodeId out = c.g.outputs().at(0).edge.node;
    std::vector<bool> materialized(c.g.size(), false);
    for (size_t i = 0; i < c.g.size(); ++i) materialized[i] = c.g.nodes()[i].op == Op::Input;
    materialized[static_cast<size_t>(out)] = true;
    kernel::Schedule s = kernel::Schedule::from_actions(f.shape, kernel::knob_actions(f, h));
    kernel::LoweredKernel lk = kernel::lower(c.g, out, materialized, s, "k");
    ASSERT_EQ(lk.pre_kernels.size(), 1u);  // the parts, then the combine
    const kernel::Stmt& parts = lk.pre_kernels[0].body.at(0);
    EXPECT_EQ(parts.loop, kernel::LoopKind::Parallel);
    EXPECT_TRUE(parts.extent.is_const(h.rfactor));
    // One thread: nothing to share, no cut.
    f.threads = 1;
    EXPECT_EQ(kernel::heuristic_knobs(f).rfactor, 1);
    check_heuristic_and_neighbours(c);
  }
}

TEST(ScheduleSpace, AColumnSumIsCutIntoBlocksOfRowsEvenOnOneThread) {
  Case c = column_sum();
  kernel::KernelFacts f = output_facts(c, 16);
  f.threads = 1;
  kernel::Knobs h = kernel::heuristic_knobs(f);
  EXPECT_EQ(h.rfactor, 16) << h.to_string();  // 2048 rows: 16 parts of 128
  EXPECT_EQ(h.vector, 64);
  check_heuristic_and_neighbours(c);
}

TEST(ScheduleSpace, ATransposedReadIsWalkedInSquares) {
  Case c = transpose_copy();
  kernel::KernelFacts f = output_facts(c, 16);
  EXPECT_EQ(f.transposed_dim, 0);
  kernel::Knobs h = kernel::heuristic_knobs(f);
  EXPECT_EQ(h.block, 16) << h.to_string();
  kernel::Schedule s = kernel::Schedule::from_actions(f.shape, kernel::knob_actions(f, h));
  ASSERT_EQ(s.loops().size(), 4u);  // [96/16 (parallel), 64/16, 96%16, 64%16 (vector)]
  EXPECT_EQ(s.loops()[0].dim, 0);
  EXPECT_EQ(s.loops()[2].dim, 0);
  EXPECT_EQ(s.loops()[3].kind, kernel::LoopKind::Vector);
  kernel::Knobs odd = h;
  odd.block = 64;  // does not tile the transposed 96
  EXPECT_THROW(kernel::knob_actions(f, odd), Error);
  check_heuristic_and_neighbours(c);
  // Rows of 56 (resnet18's maps): squares of 16, the last one overhanging the row's end.
  Case overhang = transpose_copy(56);
  kernel::KernelFacts fo = output_facts(overhang, 16);
  EXPECT_EQ(kernel::heuristic_knobs(fo).block, 16) << kernel::heuristic_knobs(fo).to_string();
  check_heuristic_and_neighbours(overhang);
  Case plain = softmax_rows();  // rows read in order: nothing to block
  EXPECT_EQ(output_facts(plain, 16).transposed_dim, -1);
}

// SIMD lanes over the split's inner 14 (the last two masked), the rows of 18 an outer loop;
// over 7 of 11 too (7 x 7 maps: more than a quarter of the lanes), not over 3.
TEST(ScheduleSpace, ASplitReductionOfFourteenTakesMaskedLanes) {
  Case c = pool_over_padded_rows();
  kernel::KernelFacts f = output_facts(c, 16);
  EXPECT_EQ(f.split_lanes, 14);
  kernel::Knobs h = kernel::heuristic_knobs(f);
  EXPECT_EQ(h.reduce_lanes, 16) << h.to_string();
  EXPECT_EQ(h.reduce_split, 14) << h.to_string();
  check_heuristic_and_neighbours(std::move(c));
  EXPECT_EQ(output_facts(pool_over_padded_rows(7, 11), 16).split_lanes, 7);
  check_heuristic_and_neighbours(pool_over_padded_rows(7, 11));
  EXPECT_EQ(output_facts(pool_over_padded_rows(3, 5), 16).split_lanes, 0);
}

TEST(ScheduleSpace, SimdLanesGoToTheInnermostReduction) {
  Case c = channel_means();
  kernel::KernelFacts f = output_facts(c, 16);
  kernel::Knobs h = kernel::heuristic_knobs(f);
  ASSERT_EQ(h.reduce_lanes, 64);  // three steps of four vectors: four accumulators (CPU code)
  std::string ir = lowered_text(c, h, f);
  // The batch loop is scalar; the positions (6 * 32, in memory order) are the lanes.
  EXPECT_NE(ir.find("for r0 in [0, 6) serial"), std::string::npos) << ir;
  EXPECT_NE(ir.find("for r1_v in [0, 64) vector"), std::string::npos) << ir;
  check_heuristic_and_neighbours(c);
}

TEST(ScheduleSpace, AReductionLanesDoNotDivideIsMaskedAtItsEnd) {
  Case c = odd_rows();
  kernel::KernelFacts f = output_facts(c, 16);
  std::string ir = lowered_text(c, kernel::heuristic_knobs(f), f);
  EXPECT_NE(ir.find("in [0, 7) serial"), std::string::npos) << ir;  // ceil(100 / 16) SIMD steps
  EXPECT_NE(ir.find("< 100"), std::string::npos) << ir;
  check_heuristic_and_neighbours(c);
}

TEST(ScheduleSpace, RfactorNeedsAReductionItsPartsDivide) {
  Case c = rms_of_few_rows();
  NodeId out = c.g.outputs().at(0).edge.node;
  std::vector<bool> materialized(c.g.size(), false);
  for (size_t i = 0; i < c.g.size(); ++i) materialized[i] = c.g.nodes()[i].op == Op::Input;
  materialized[static_cast<size_t>(out)] = true;
  kernel::Schedule three = kernel::Schedule::from_actions({Expr(3)}, {kernel::Action::rfactor(3)});
  EXPECT_THROW(kernel::lower(c.g, out, materialized, three, "k"), Error);  // 131072 is not a multiple of 3
  EXPECT_THROW(kernel::Schedule::from_actions({Expr(3)}, {kernel::Action::rfactor(1)}), Error);
  Case e;
  Tensor x = e.g.input("x", {Expr(64)});
  e.g.mark_output(x * 2.0, "y");
  NodeId mul = e.g.outputs().at(0).edge.node;
  std::vector<bool> m(e.g.size(), true);
  kernel::Schedule two = kernel::Schedule::from_actions({Expr(64)}, {kernel::Action::rfactor(2)});
  EXPECT_THROW(kernel::lower(e.g, mul, m, two, "k"), Error);  // nothing to cut
}

TEST(ScheduleSpace, ASumOverAdjacentAxesIsOneReduction) {
  auto reductions = [&](const Tensor& y) {
    int n = 0;
    for (const Node& node : y.graph()->nodes()) n += is_reduce(node.op) ? 1 : 0;
    return n;
  };
  Graph g1;
  Tensor y1 = ops::sum(g1.input("x", {Expr(4), Expr(8), Expr(16)}), {1, 2}, false);
  EXPECT_EQ(reductions(y1), 1);
  EXPECT_EQ(to_string(y1.shape()), "[4]");
  Graph g2;
  // Transposed, no two axes are one run in memory: the last axis alone first, then its result
  // (contiguous) over the other two at once.
  Tensor t = g2.input("x", {Expr(4), Expr(8), Expr(16)}).transpose(0, 2);
  EXPECT_EQ(reductions(ops::amax(t, {}, false)), 2);
  // A channels-last image's positions are one run in memory, though not in logical order.
  Graph g4;
  Tensor nchw = g4.input("x", {Expr(2), Expr(5), Expr(6), Expr(16)}).permute({0, 3, 1, 2});
  EXPECT_EQ(reductions(ops::sum(nchw, {2, 3}, true)), 1);
  Graph g3;
  Tensor y3 = ops::sum(g3.input("x", {Expr(4), Expr(8), Expr(16)}), {0, 2}, true);  // two runs
  EXPECT_EQ(reductions(y3), 2);
  EXPECT_EQ(to_string(y3.shape()), "[1, 8, 1]");
}

TEST(ScheduleSpace, ATileTakesTheWidestColumnsThatDivideN) {
  // N = 112 = 7 vectors (a pointwise convolution over 28 x 28 positions is 784 = 7 x 112):
  // a 3 x 112 tile keeps 21 accumulators, where 16 columns would keep 6.
  Case c = matmul(24, 112);
  Contraction k = contraction_kernel(c);
  ASSERT_GE(k.node, 0);
  kernel::KernelFacts f = kernel::kernel_facts(c.g, k.node, k.materialized, kernel::Target{16, 2});
  kernel::Knobs h = kernel::heuristic_knobs(f);
  EXPECT_EQ(h.nr, 112);
  EXPECT_EQ(h.mr, 3);
  check_heuristic_and_neighbours(c);
}

TEST(ScheduleSpace, TilesOverAShortContractionRunRowTilesOutermost) {
  // K <= 128 (attention scores: K = a head) runs m-outer, so the output is written a row at a
  // time and the parallel loop takes row tiles (a causal mask's live tiles shared evenly); a long
  // contraction keeps n-outer, its packed panel staying in cache while the rows pass.
  auto knobs = [](int64_t m, int64_t k, int64_t n) {
    Case c;
    Tensor a = c.g.input("a", {Expr(m), Expr(k)}), b = c.g.input("b", {Expr(k), Expr(n)});
    c.g.mark_output(a.matmul(b), "y");
    c.inputs["a"] = filled(DType::F32, {m, k}, 1);
    c.inputs["b"] = filled(DType::F32, {k, n}, 1);
    Contraction t = contraction_kernel(c);
    EXPECT_GE(t.node, 0);
    kernel::KernelFacts f = kernel::kernel_facts(c.g, t.node, t.materialized, kernel::Target{16, 2});
    if (k <= 128) check_heuristic_and_neighbours(c);
    return kernel::heuristic_knobs(f);
  };
  kernel::Knobs narrow = knobs(24, 64, 16), wide = knobs(24, 64, 64);
  EXPECT_EQ(narrow.nr, 16);
  EXPECT_FALSE(narrow.n_outer) << narrow.to_string();
  EXPECT_EQ(wide.nr, 64);
  EXPECT_FALSE(wide.n_outer) << wide.to_string();
  EXPECT_TRUE(knobs(24, 256, 16).n_outer);
  // A dynamic K (a prefill's P·V over 16*blocks keys) is not known to be short: n-outer.
  Case c;
  Expr keys = c.g.dim("blocks") * 16;
  Tensor p = c.g.input("p", {Expr(24), keys}), v = c.g.input("v", {keys, Expr(64)});
  c.g.mark_output(p.matmul(v), "y");
  Contraction t = contraction_kernel(c);
  ASSERT_GE(t.node, 0);
  kernel::KernelFacts f = kernel::kernel_facts(c.g, t.node, t.materialized, kernel::Target{16, 2});
  EXPECT_EQ(f.contraction_extent, 16);
  EXPECT_TRUE(kernel::heuristic_knobs(f).n_outer) << kernel::heuristic_knobs(f).to_string();
}

TEST(ScheduleSpace, MatrixVectorProductsPrefetchWeightsOnly) {
  // Weights (parameters, often a file mapped in small pages) are prefetched
  // rows ahead; a matrix given as an input (an array in huge pages) is not.
  for (bool weights : {true, false}) {
    Case c;
    Tensor x = c.g.input("x", {Expr(1), Expr(1024)});
    Tensor w = weights ? c.g.parameter("w", {Expr(1024), Expr(1024)}) : c.g.input("w", {Expr(1024), Expr(1024)});
    c.g.mark_output(x.matmul(w.transpose(0, 1)), "y");
    kernel::Knobs h = kernel::heuristic_knobs(output_facts(c, 16));
    EXPECT_EQ(h.rows, 4);
    EXPECT_EQ(h.prefetch, weights ? 2 : 0) << h.to_string();
  }
  Case rows = softmax_rows();  // row kernels prefetch their input either way (when big enough)
  Tensor x = rows.g.input("big", {Expr(1024), Expr(1024)});
  rows.g.mark_output(ops::softmax(x, -1), "z");
  NodeId out = rows.g.outputs().back().edge.node;
  std::vector<bool> materialized(rows.g.size(), false);
  for (size_t i = 0; i < rows.g.size(); ++i) materialized[i] = rows.g.nodes()[i].op == Op::Input;
  materialized[static_cast<size_t>(out)] = true;
  EXPECT_EQ(kernel::heuristic_knobs(kernel::kernel_facts(rows.g, out, materialized, kernel::Target{16, 2})).prefetch, 2);
}

// The nibble a lane takes is a digit of its reduction index, (r / 16) % 2: reduce lanes
// spanning the block (32) make it a constant in each vector of 16 (no select, no
// per-lane fallback), and every neighbour still agrees with the interpreter.
TEST(ScheduleSpace, PackedNibblesTakeReduceLanesSpanningTheirBlock) {
  kernel::KernelFacts f = output_facts(matvec_nibbles(), 16);
  EXPECT_EQ(f.lane_period, 32);
  EXPECT_EQ(kernel::heuristic_knobs(f).reduce_lanes, 32) << kernel::heuristic_knobs(f).to_string();
  kernel::KernelFacts plain = output_facts(matvec(true), 16);  // Q8_0: scales per 32, no digit
  EXPECT_EQ(plain.lane_period, 0);
  EXPECT_EQ(kernel::heuristic_knobs(plain).reduce_lanes, 16);
  check_heuristic_and_neighbours(matvec_nibbles());
}

// ONNX exports of attention read activations as [positions, 1, width]
// (a transpose of [1, positions, width]): the projection's tile takes its
// rows from the positions, not from the size-1 dim before the last.
Case projection_of_positions_by_one(int64_t m = 50) {
  Case c;
  Tensor x = c.g.input("x", {Expr(m), Expr(1), Expr(48)}), w = c.g.input("w", {Expr(48), Expr(64)});
  Tensor b = c.g.input("b", {Expr(64)});
  c.g.mark_output(x.matmul(w) + b, "y");
  c.inputs["x"] = filled(DType::F32, {m, 1, 48}, 1);
  c.inputs["w"] = filled(DType::F32, {48, 64}, 1);
  c.inputs["b"] = filled(DType::F32, {64}, 1);
  return c;
}

TEST(ScheduleSpace, ATileTakesItsRowsFromTheLastDimThatIsNotOne) {
  Case c = projection_of_positions_by_one();
  kernel::KernelFacts f = output_facts(c, 16);
  ASSERT_TRUE(f.tileable);
  EXPECT_EQ(f.row_dim, 0);
  kernel::Knobs h = kernel::heuristic_knobs(f);
  EXPECT_GT(h.mr, 1) << h.to_string();  // 1 before: the rows were the size-1 dim
  EXPECT_EQ(h.nr, 64) << h.to_string();
  check_heuristic_and_neighbours(std::move(c));
}

// x + Linear(y) as an ONNX export writes it: the projection's [M, N] output
// reshaped to [M, 1, N] and transposed to [1, M, N] before the residual add.
// The add reads the contraction's points in their own order, so its kernel
// is still the contraction's, with a register tile (it was a row kernel of
// dot products, ~7x slower in ViT-B/16).
Case residual_through_reshape(int64_t m = 50) {
  Case c;
  Tensor y = c.g.input("y", {Expr(m), Expr(48)}), w = c.g.input("w", {Expr(48), Expr(64)});
  Tensor r = c.g.input("r", {Expr(1), Expr(m), Expr(64)});
  Tensor projected = y.matmul(w).reshape({Expr(m), Expr(1), Expr(64)}).transpose(0, 1);
  c.g.mark_output(r + projected, "y");
  c.inputs["y"] = filled(DType::F32, {m, 48}, 1);
  c.inputs["w"] = filled(DType::F32, {48, 64}, 1);
  c.inputs["r"] = filled(DType::F32, {1, m, 64}, 1);
  return c;
}

TEST(ScheduleSpace, AResidualAddThroughAReshapeKeepsTheContractionsTile) {
  Case c = residual_through_reshape();
  NodeId out = c.g.outputs().at(0).edge.node;
  std::vector<bool> materialized(c.g.size(), false);
  for (size_t i = 0; i < c.g.size(); ++i) materialized[i] = c.g.nodes()[i].op == Op::Input;
  materialized[static_cast<size_t>(out)] = true;
  EXPECT_GE(kernel::contraction_of(c.g, out, materialized), 0);
  kernel::KernelFacts f = kernel::kernel_facts(c.g, out, materialized, kernel::Target{16, 2});
  ASSERT_TRUE(f.tileable);
  kernel::Knobs h = kernel::heuristic_knobs(f);
  EXPECT_GT(h.mr, 1) << h.to_string();
  EXPECT_EQ(h.nr, 64) << h.to_string();
  check_heuristic_and_neighbours(std::move(c));
}

// Rows of 37 scores (q.k over a static length the lanes do not divide, as
// ViT's 197 positions, its keys stored transposed): SIMD along the row, the
// last vector masked, not scalar.
Case scores_of_odd_length() {
  Case c;
  Tensor q = c.g.input("q", {Expr(2), Expr(40), Expr(16)}), kt = c.g.input("kt", {Expr(2), Expr(16), Expr(37)});
  c.g.mark_output(q.matmul(kt) * 0.25, "y");
  c.inputs["q"] = filled(DType::F32, {2, 40, 16}, 1);
  c.inputs["kt"] = filled(DType::F32, {2, 16, 37}, 1);
  return c;
}

TEST(ScheduleSpace, ARowTheLanesDoNotDivideIsSimdWithAMaskedLastVector) {
  Case c = scores_of_odd_length();
  kernel::KernelFacts f = output_facts(c, 16);
  EXPECT_TRUE(f.vector_last);
  kernel::Knobs h = kernel::heuristic_knobs(f);
  EXPECT_EQ(h.vector, 16) << h.to_string();
  EXPECT_EQ(h.rfactor, 1) << h.to_string();  // 16-long dot products are not cut into parts
  check_heuristic_and_neighbours(std::move(c));
  // A row longer than a quarter vector is one masked vector (mobilenet's 14- and 7-wide maps);
  // shorter ones stay scalar.
  EXPECT_TRUE(output_facts(matmul(24, 12), 16).vector_last);
  check_heuristic_and_neighbours(matmul(24, 12));
  EXPECT_TRUE(output_facts(matmul(24, 7), 16).vector_last);
  check_heuristic_and_neighbours(matmul(24, 7));
  EXPECT_FALSE(output_facts(matmul(24, 4), 16).vector_last);
}

// y[c, n] = sum_t k[c, t] x[c, t, n], 24 channels of 9 taps over rows of `width`: a depthwise
// convolution's contraction, each channel reading its own input.
Case depthwise_rows(int64_t width) {
  Case c;
  Tensor k = c.g.input("k", {Expr(24), Expr(9)}), y = c.g.input("y", {Expr(24), Expr(9), Expr(width)});
  c.g.mark_output((k.reshape({Expr(24), Expr(9), Expr(1)}) * y).sum(1), "y");
  c.inputs["k"] = filled(DType::F32, {24, 9}, 1);
  c.inputs["y"] = filled(DType::F32, {24, 9, width}, 1);
  return c;
}

// A pointwise convolution over 28 x 28 maps, [24, 88] weights by [88, 28, 28] inputs: its rows of
// 28 are one masked vector each, no register tile. Four output channels are unrolled around that
// vector (each channel's weights broadcast, each input vector loaded once for the four), so the
// reduction's loads and FMA chains are shared four ways (mobilenet_v3_small's 88 -> 24 conv,
// 1 thread: 0.101 -> 0.038 ms). A depthwise conv reads a different input per channel: no such dim
// (its channels are still unrolled, as independent accumulators: see the test after the next).
TEST(ScheduleSpace, APointwiseConvOneVectorWideUnrollsItsOutputChannels) {
  Case c;
  Tensor w = c.g.input("w", {Expr(24), Expr(88)}), x = c.g.input("x", {Expr(88), Expr(28), Expr(28)});
  Tensor product = w.reshape({Expr(1), Expr(24), Expr(88), Expr(1), Expr(1)}) *
                   x.reshape({Expr(1), Expr(1), Expr(88), Expr(28), Expr(28)});
  c.g.mark_output(product.sum(2), "y");
  c.inputs["w"] = filled(DType::F32, {24, 88}, 1);
  c.inputs["x"] = filled(DType::F32, {88, 28, 28}, 1);
  kernel::KernelFacts f = output_facts(c, 16);
  EXPECT_FALSE(f.tileable);
  EXPECT_EQ(f.shared_row_dim, 1);
  kernel::Knobs h = kernel::heuristic_knobs(f);
  EXPECT_EQ(h.vector, 16) << h.to_string();
  EXPECT_EQ(h.rows, 4) << h.to_string();
  check_heuristic_and_neighbours(std::move(c));

  Case depthwise = depthwise_rows(28);
  EXPECT_EQ(output_facts(depthwise, 16).shared_row_dim, -1);
}

// The same conv with a bias and a ReLU after it (a max over the stacked pair of the value and
// 0, written out inline): the ReLU ends the epilogue, so the kernel still finds its contraction
// through it and unrolls the output channels around the vector.
TEST(ScheduleSpace, AReluEndedPointwiseConvKeepsItsVectorRows) {
  Case c;
  Tensor w = c.g.input("w", {Expr(24), Expr(88)}), x = c.g.input("x", {Expr(88), Expr(28), Expr(28)});
  Tensor bias = c.g.input("bias", {Expr(1), Expr(24), Expr(1), Expr(1)});
  Tensor product = w.reshape({Expr(1), Expr(24), Expr(88), Expr(1), Expr(1)}) *
                   x.reshape({Expr(1), Expr(1), Expr(88), Expr(28), Expr(28)});
  c.g.mark_output(ops::relu(product.sum(2) + bias), "y");
  c.inputs["w"] = filled(DType::F32, {24, 88}, 1);
  c.inputs["x"] = filled(DType::F32, {88, 28, 28}, 1);
  c.inputs["bias"] = filled(DType::F32, {1, 24, 1, 1}, 2);
  kernel::KernelFacts f = output_facts(c, 16);
  EXPECT_GE(f.contraction, 0);
  EXPECT_EQ(c.g.node(f.contraction).op, Op::SumReduce);
  kernel::Knobs h = kernel::heuristic_knobs(f);
  EXPECT_EQ(h.rows, 4) << h.to_string();
  check_heuristic_and_neighbours(std::move(c));
}

// A nearest 2x upsampling read along its rows: each input element fills two lanes (x / 2),
// which the code generator loads as half a vector repeated. The facts count those reads as
// SIMD, so the copy runs a vector at a time instead of an element at a time (3x at 2 threads).
TEST(ScheduleSpace, ANearestUpsamplingRepeatsLanesInVectors) {
  Case c;
  Tensor x = c.g.input("x", {Expr(3), Expr(20), Expr(24)});
  Tensor up = x.unsqueeze(3).expand({Expr(3), Expr(20), Expr(24), Expr(2)}).reshape({Expr(3), Expr(20), Expr(48)});
  c.g.mark_output(up * 1.5, "y");
  c.inputs["x"] = filled(DType::F32, {3, 20, 24}, 1);
  kernel::KernelFacts f = output_facts(c, 16);
  EXPECT_TRUE(f.vector_last);
  EXPECT_EQ(kernel::heuristic_knobs(f).vector % 16, 0) << kernel::heuristic_knobs(f).to_string();
  check_heuristic_and_neighbours(std::move(c));
}

// A row flipped (x[.., W - 1 - w]): the lanes walk memory downwards, one element each, which the
// CPU loads as one vector and reverses. The facts count it as SIMD; every neighbour agrees with
// the interpreter (a row of 40: the last vector overhangs, masked).
TEST(ScheduleSpace, AFlippedRowIsReadInReversedVectors) {
  Case c;
  Tensor x = c.g.input("x", {Expr(6), Expr(40)});
  c.g.mark_output(x.flip(1) * 1.5, "y");
  c.inputs["x"] = filled(DType::F32, {6, 40}, 1);
  kernel::KernelFacts f = output_facts(c, 16);
  EXPECT_TRUE(f.vector_last);
  EXPECT_GT(kernel::heuristic_knobs(f).vector, 0) << kernel::heuristic_knobs(f).to_string();
  check_heuristic_and_neighbours(std::move(c));
}

// A 5 x 5 depthwise conv over 14 x 14 maps: each output row is one masked vector whose 25 taps
// would add into one accumulator, a chain of dependent FMAs. No dim shares the vectors read, but
// the output rows are independent: the heuristic unrolls them around the vector (seven rows,
// seven accumulators), and every neighbour agrees with the interpreter. 8 x 240 x 14², 2 threads:
// 0.337 -> 0.278 ms (in one process).
TEST(ScheduleSpace, ADepthwiseConvUnrollsItsOutputRowsAsIndependentAccumulators) {
  Case c;
  Tensor x = c.g.input("x", {Expr(1), Expr(6), Expr(14), Expr(14)});
  Tensor w = c.g.input("w", {Expr(6), Expr(1), Expr(5), Expr(5)});
  c.g.mark_output(ops::conv2d(x, w, std::nullopt, {1, 1}, {2, 2}, {1, 1}, 6), "y");
  c.inputs["x"] = filled(DType::F32, {1, 6, 14, 14}, 1);
  c.inputs["w"] = filled(DType::F32, {6, 1, 5, 5}, 2);
  kernel::KernelFacts f = output_facts(c, 16);
  EXPECT_EQ(f.shared_row_dim, -1);
  kernel::Knobs h = kernel::heuristic_knobs(f);
  EXPECT_EQ(h.vector, 16) << h.to_string();
  EXPECT_EQ(h.rows, 7) << h.to_string();
  check_heuristic_and_neighbours(std::move(c));

  EXPECT_EQ(kernel::heuristic_knobs(output_facts(depthwise_rows(28), 16)).rows, 4);
}

// A depthwise-like contraction over rows of 50: no dim shares its vectors, and 50 is not a
// multiple of 16. Two vectors a step overhang the row by 14, as single vectors do: the heuristic
// takes them (two accumulators sharing each weight broadcast) and two channels around them
// (four accumulators), and every width agrees with the interpreter. Rows of 28 keep one vector
// (two would overhang by 36).
TEST(ScheduleSpace, ARowNoWidthDividesTakesSeveralVectorsThatOverhangNoFurther) {
  Case c = depthwise_rows(50);
  kernel::KernelFacts f = output_facts(c, 16);
  kernel::Knobs h = kernel::heuristic_knobs(f);
  EXPECT_EQ(h.vector, 32) << h.to_string();
  EXPECT_EQ(h.rows, 2) << h.to_string();
  check_heuristic_and_neighbours(std::move(c));

  EXPECT_EQ(kernel::heuristic_knobs(output_facts(depthwise_rows(28), 16)).vector, 16);
}

// A decode step's P·V over an f16 value cache [heads, capacity, 64] and the step's own values: the
// cache's first `past` rows widened, then concatenated. Read through the widening's dynamic shape,
// the cache's index has (64 r + i) / (64 past) and r % past in it where r < past; seen over that
// range it walks the output's last dim with unit stride: SIMD lanes, not a scalar kernel (the
// Llama decode attention with a half-precision cache: 0.16 -> 0.52 ms a layer when scalar).
TEST(ScheduleSpace, ACastOverADynamicSliceReadsAlongTheLanes) {
  Case c;
  Expr past = c.g.dim("past");
  Tensor cache = c.g.input("v", {Expr(12), Expr(272), Expr(64)}, DType::F16);
  Tensor now = c.g.input("vn", {Expr(12), Expr(1), Expr(64)});
  Tensor p = c.g.input("p", {Expr(12), Expr(1), past + 1});
  Tensor values = ops::concat({cache.slice(1, Expr(0), past).cast(DType::F32), now}, 1);
  c.g.mark_output(p.matmul(values), "y");
  kernel::KernelFacts f = output_facts(c, 16);
  EXPECT_TRUE(f.vector_last);
  EXPECT_EQ(f.transposed_dim, -1);
  EXPECT_EQ(kernel::heuristic_knobs(f).vector, 64) << kernel::heuristic_knobs(f).to_string();  // the whole row
}

TEST(ScheduleSpace, MatvecF32) { check_heuristic_and_neighbours(matvec(false)); }
TEST(ScheduleSpace, MatvecQuantized) { check_heuristic_and_neighbours(matvec(true)); }
TEST(ScheduleSpace, Matmul) { check_heuristic_and_neighbours(matmul()); }
TEST(ScheduleSpace, SoftmaxRows) { check_heuristic_and_neighbours(softmax_rows()); }
TEST(ScheduleSpace, CausalAttention) { check_heuristic_and_neighbours(causal_attention()); }

}  // namespace
}  // namespace lumen
