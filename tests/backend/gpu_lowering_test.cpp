// Tests for lumen/backend/gpu (the shared GPU lowering and printer) and
// the GPU backends (OpenCL executed on the machine's OpenCL device: PoCL on a
// CPU here; CUDA where cuInit finds a GPU): the grid is the leading loop nest,
// work-group reductions are refused where they would be wrong, and compiled
// programs agree with the reference interpreter in both reduction modes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>

#include "lumen/backend/cuda/cuda_backend.h"
#include "lumen/backend/cuda/cuda_driver.h"
#include "lumen/backend/gpu/buffer_extent.h"
#include "lumen/backend/gpu/gpu_kernel.h"
#include "lumen/backend/gpu/gpu_printer.h"
#include "lumen/compile.h"
#include "lumen/compiler/compiler.h"
#include "lumen/kernel/heuristic.h"
#include "lumen/kernel/schedule_space.h"
#include "lumen/runtime/compiled_executor.h"
#include "lumen/ops/conv.h"
#include "lumen/ops/linalg.h"
#include "lumen/ops/reduce.h"
#include "tests/runtime/gather_range_check.h"
#ifdef LUMEN_HAVE_OPENCL
#include "lumen/backend/opencl/opencl_backend.h"
#endif

namespace lumen {
namespace {

using namespace lumen::ops;

using namespace lumen::kernel;

// out[i, j] = in[i, j] * 2 over [rows, cols].
Kernel elementwise(int64_t rows, int64_t cols) {
  Expr i = Expr::index("i", Expr(rows)), j = Expr::index("j", Expr(cols));
  Value x = load(1, DType::F32, i * cols + j, Expr(1));
  Block inner = {Stmt::store(0, i * cols + j, binary(Op::Mul, x, number(2, DType::F32)))};
  Kernel k;
  k.name = "twice";
  k.buffers = {{"out", DType::F32, true}, {"in", DType::F32, false}};
  k.body = {Stmt::make_loop(i, Expr(rows), LoopKind::Parallel, {Stmt::make_loop(j, Expr(cols), LoopKind::Serial, inner)})};
  return k;
}

// Per row: acc = Σ_r f(acc, x[row, r]) with `rolling` reading the accumulator inside the loop.
Kernel row_reduce(bool rolling) {
  Expr i = Expr::index("i", Expr(4)), r = Expr::index("r", Expr(100));
  Value x = load(1, DType::F32, i * 100 + r, Expr(1));
  Value term = rolling ? binary(Op::Mul, x, acc_value(0, DType::F32)) : x;
  Block row = {Stmt::acc_init(0, DType::F32, Combine::Sum),
               Stmt::make_loop(r, Expr(100), LoopKind::Serial, {Stmt::acc_update(0, Combine::Sum, term)}),
               Stmt::store(0, i, acc_value(0, DType::F32))};
  Kernel k;
  k.name = "rows";
  k.accumulators = 1;
  k.buffers = {{"out", DType::F32, true}, {"in", DType::F32, false}};
  k.body = {Stmt::make_loop(i, Expr(4), LoopKind::Parallel, row)};
  return k;
}

TEST(GpuLowering, LeadingLoopNestBecomesTheGrid) {
  gpu::GpuKernel g = gpu::lower_for_gpu(elementwise(3, 5), {});
  ASSERT_EQ(g.grid.size(), 2u);
  EXPECT_EQ(g.grid[0].extent, Expr(3));
  EXPECT_EQ(g.grid[1].extent, Expr(5));
  ASSERT_EQ(g.kernel.body.size(), 1u);
  EXPECT_EQ(g.kernel.body[0].kind, StmtKind::Store);
}

// out[i, j] for j in 4 lanes: the lane loop is the thread's register tile, not a grid axis.
TEST(GpuLowering, LaneLoopsStayInTheThread) {
  Kernel k = elementwise(3, 4);
  k.body[0].body[0].loop = LoopKind::Unroll;
  gpu::GpuKernel g = gpu::lower_for_gpu(k, {});
  ASSERT_EQ(g.grid.size(), 1u);
  ASSERT_EQ(g.kernel.body.size(), 1u);
  EXPECT_EQ(g.kernel.body[0].loop, LoopKind::Unroll);
  std::string cl = gpu::print_gpu_kernel(g, gpu::opencl_dialect(), "k");
  EXPECT_NE(cl.find("lanes in registers"), std::string::npos) << cl;
  EXPECT_NE(cl.find("b0[((i * 4L) + 3L)]"), std::string::npos) << cl;  // the fourth lane, unrolled
}

TEST(GpuLowering, HeuristicSharesRowsAcrossAWorkGroup) {
  EXPECT_EQ(gpu::heuristic_gpu_schedule(row_reduce(false)).reduce, gpu::ReduceMode::Group);   // 4 rows of 100
  EXPECT_EQ(gpu::heuristic_gpu_schedule(row_reduce(true)).reduce, gpu::ReduceMode::Thread);   // rolling update
  EXPECT_EQ(gpu::heuristic_gpu_schedule(elementwise(3, 5)).reduce, gpu::ReduceMode::Thread);  // nothing to reduce
}

TEST(GpuLowering, GroupReductionOnlyWhereItIsAPlainCombine) {
  gpu::GpuSchedule group;
  group.reduce = gpu::ReduceMode::Group;
  gpu::GpuKernel plain = gpu::lower_for_gpu(row_reduce(false), group);
  EXPECT_EQ(plain.schedule.reduce, gpu::ReduceMode::Group);
  std::string cl = gpu::print_gpu_kernel(plain, gpu::opencl_dialect(), "k");
  EXPECT_NE(cl.find("barrier(CLK_LOCAL_MEM_FENCE)"), std::string::npos) << cl;
  EXPECT_NE(cl.find("+= 64"), std::string::npos) << cl;  // the reduction strided over the group
  std::string cu = gpu::print_gpu_kernel(plain, gpu::cuda_dialect(), "k");
  EXPECT_NE(cu.find("__syncthreads()"), std::string::npos) << cu;
  EXPECT_NE(cu.find("__shared__ float lm_red_f[64]"), std::string::npos) << cu;
  // A rolling update (reads the accumulator it updates) cannot be split into partial results.
  gpu::GpuKernel rolling = gpu::lower_for_gpu(row_reduce(true), group);
  EXPECT_EQ(rolling.schedule.reduce, gpu::ReduceMode::Thread);
  EXPECT_EQ(gpu::print_gpu_kernel(rolling, gpu::opencl_dialect(), "k").find("barrier"), std::string::npos);
}

// out[i, j] = Σ_r a[i, r] · b[r, j] (+ c[i, j] read inside the loop when `own`),
// over M × N points and K terms; `triangular`: row i sums i + 1 terms.
Kernel contraction(int64_t m, int64_t n, int64_t k, bool own = false, bool triangular = false) {
  Expr i = Expr::index("i", Expr(m)), j = Expr::index("j", Expr(n));
  Expr extent = triangular ? i + 1 : Expr(k);
  Expr r = Expr::var("r", 0, k - 1, extent);
  Value term = binary(Op::Mul, load(1, DType::F32, i * k + r, Expr(1)), load(2, DType::F32, r * n + j, Expr(1)));
  if (own) term = binary(Op::Add, term, load(3, DType::F32, i * n + j, Expr(1)));
  Block point = {Stmt::acc_init(0, DType::F32, Combine::Sum),
                 Stmt::make_loop(r, extent, LoopKind::Serial, {Stmt::acc_update(0, Combine::Sum, term)}),
                 Stmt::store(0, i * n + j, acc_value(0, DType::F32))};
  Kernel kn;
  kn.name = "mm";
  kn.accumulators = 1;
  kn.buffers = {{"out", DType::F32, true}, {"a", DType::F32, false}, {"b", DType::F32, false}};
  if (own) kn.buffers.push_back({"c", DType::F32, false});
  kn.body = {Stmt::make_loop(i, Expr(m), LoopKind::Parallel,
                             {Stmt::make_loop(j, Expr(n), LoopKind::Parallel, point)})};
  return kn;
}

gpu::GpuSchedule staged(int group_size) {
  gpu::GpuSchedule s;
  s.stage = true;
  s.group_size = group_size;
  return s;
}

// A block of points copies the rows of `a` and the columns of `b` it shares
// into local memory, a chunk of r at a time; a read per point is not staged.
TEST(GpuLowering, StagingTilesTheOperandsABlockOfPointsShares) {
  gpu::GpuKernel g = gpu::lower_for_gpu(contraction(100, 60, 50, true), staged(256));
  ASSERT_TRUE(g.staging.active);
  EXPECT_EQ(g.staging.bx, 16);  // over j, the last grid axis
  EXPECT_EQ(g.staging.by, 16);
  EXPECT_EQ(g.staging.chunk, 16);
  ASSERT_EQ(g.staging.tiles.size(), 2u);  // a and b; c[i, j] is read once per point
  const gpu::StagedTile& a = g.staging.tiles[0];
  EXPECT_EQ(a.load->buffer, 1);
  ASSERT_EQ(a.dims.size(), 2u);
  EXPECT_EQ(a.dims[0].kind, gpu::StagedDim::BlockY);  // a[i*50 + r]: r fastest, the copy is coalesced
  EXPECT_EQ(a.dims[1].kind, gpu::StagedDim::Chunk);
  EXPECT_EQ(a.strides[0], 17);  // 16 padded to odd: items of a warp read different banks
  const gpu::StagedTile& b = g.staging.tiles[1];
  EXPECT_EQ(b.dims[0].kind, gpu::StagedDim::Chunk);  // b[r*60 + j]: j fastest
  EXPECT_EQ(b.dims[1].kind, gpu::StagedDim::BlockX);
  EXPECT_EQ(gpu::work_groups(g), Expr(4 * 7));  // ceil(60 / 16) × ceil(100 / 16)
  std::string cl = gpu::print_gpu_kernel(g, gpu::opencl_dialect(), "k");
  EXPECT_NE(cl.find("__local float lm_tile0[272]"), std::string::npos) << cl;
  EXPECT_NE(cl.find("if (lm_in) {"), std::string::npos) << cl;  // items past the grid's edge do not store
  EXPECT_NE(cl.find("b3[((i * 60L) + j)]"), std::string::npos) << cl;
  std::string cu = gpu::print_gpu_kernel(g, gpu::cuda_dialect(), "k");
  EXPECT_NE(cu.find("__shared__ float lm_tile1["), std::string::npos) << cu;
  EXPECT_NE(cu.find("__syncthreads()"), std::string::npos) << cu;
}

TEST(GpuLowering, StagingNeedsTheSameIterationsOnEveryItem) {
  // Row i sums i + 1 terms: items would reach the barriers a different number of times.
  gpu::GpuKernel g = gpu::lower_for_gpu(contraction(40, 40, 40, false, true), staged(64));
  EXPECT_FALSE(g.staging.active);
  EXPECT_FALSE(g.schedule.stage);
  EXPECT_EQ(gpu::print_gpu_kernel(g, gpu::opencl_dialect(), "k").find("barrier"), std::string::npos);
  // Narrow grids keep the block within the axis: 2 columns take 2 items, the rest go to rows.
  gpu::GpuKernel narrow = gpu::lower_for_gpu(contraction(300, 2, 64), staged(64));
  ASSERT_TRUE(narrow.staging.active);
  EXPECT_EQ(narrow.staging.bx, 2);
  EXPECT_EQ(narrow.staging.by, 32);
  // Tiles beyond the local-memory budget take shorter chunks.
  gpu::GpuKernel small = gpu::lower_for_gpu(contraction(300, 300, 64), staged(1024));
  ASSERT_TRUE(small.staging.active);
  EXPECT_LE(small.staging.local_bytes(), gpu::kMaxStagedBytes);
  EXPECT_EQ(gpu::heuristic_gpu_schedule(contraction(512, 512, 512)).stage, true);
  EXPECT_EQ(gpu::heuristic_gpu_schedule(contraction(512, 512, 8)).stage, false);  // too few terms to pay
}

// out[j] = Σ_r x[r] · w[j, r], four rows a point in registers: neighbouring
// points read rows far apart, so a work-group shares each point (lane loops
// looked through: one partial sum a lane per item, combined a lane at a time).
TEST(GpuLowering, RowsReadFarApartShareAPointAcrossAGroup) {
  Expr j = Expr::index("j", Expr(1000)), l = Expr::index("l", Expr(4)), r = Expr::index("r", Expr(768));
  Value term = binary(Op::Mul, load(1, DType::F32, r, Expr(1)), load(2, DType::F32, (j * 4 + l) * 768 + r, Expr(1)));
  Block lane = {Stmt::acc_init(0, DType::F32, Combine::Sum),
                Stmt::make_loop(r, Expr(768), LoopKind::Serial, {Stmt::acc_update(0, Combine::Sum, term)}),
                Stmt::store(0, j * 4 + l, acc_value(0, DType::F32))};
  Kernel k;
  k.name = "gemv";
  k.accumulators = 1;
  k.buffers = {{"out", DType::F32, true}, {"x", DType::F32, false}, {"w", DType::F32, false}};
  k.body = {Stmt::make_loop(j, Expr(1000), LoopKind::Parallel, {Stmt::make_loop(l, Expr(4), LoopKind::Unroll, lane)})};
  gpu::GpuSchedule s = gpu::heuristic_gpu_schedule(k);
  EXPECT_EQ(s.reduce, gpu::ReduceMode::Group);
  std::string cl = gpu::print_gpu_kernel(gpu::lower_for_gpu(k, s), gpu::opencl_dialect(), "k");
  EXPECT_NE(cl.find("for (lm_i64 r = lm_lid; r < 768L; r += 64)"), std::string::npos) << cl;
  for (int lane = 0; lane < 4; ++lane) {
    std::string acc = "acc0_" + std::to_string(lane);
    EXPECT_NE(cl.find("// " + acc + ": the work-group's partial results combined"), std::string::npos) << cl;
  }
  EXPECT_NE(cl.find("if (lm_lid == 0) {"), std::string::npos) << cl;  // one item stores
}

TEST(GpuLowering, BufferExtentsBoundTheTouchedElements) {
  gpu::BufferExtents e(elementwise(3, 5));
  std::vector<int64_t> n = e.elements(nullptr);
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0], 15);
  EXPECT_EQ(n[1], 15);
  // A padded read: out[i] = i < 3 ? in[i] : 0 over i in [0, 5) touches 3 elements of `in`, not 5.
  Expr i = Expr::index("i", Expr(5));
  Kernel k;
  k.buffers = {{"out", DType::F32, true}, {"in", DType::F32, false}};
  k.body = {Stmt::make_loop(i, Expr(5), LoopKind::Serial, {Stmt::store(0, i, load(1, DType::F32, i, lt(i, Expr(3))))})};
  std::vector<int64_t> padded = gpu::BufferExtents(k).elements(nullptr);
  EXPECT_EQ(padded[0], 5);
  EXPECT_EQ(padded[1], 3);
}

TEST(GpuScheduleAction, ParsesPrintsAndRejectsBadSizes) {
  std::vector<Action> a = parse_actions("split(0,4) gpu(1,128)");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1], Action::gpu(1, 128));
  EXPECT_EQ(to_string(a), "split(0,4) gpu(1,128)");
  Schedule s = Schedule::from_actions({Expr(8), Expr(16)}, a);
  EXPECT_EQ(s.gpu_reduce(), 1);
  EXPECT_EQ(s.gpu_group(), 128);
  EXPECT_THROW(Schedule::from_actions({Expr(8)}, {Action::gpu(1, 100)}), Error);  // not a power of two
  EXPECT_THROW(Schedule::from_actions({Expr(8)}, {Action::gpu(3, 64)}), Error);   // no such mode
}

TEST(GpuScheduleAction, TheSpaceHasWorkGroupKnobsOnlyForGpuTargets) {
  Graph g;
  Tensor x = g.input("x", {Expr(64), Expr(256)});
  Tensor y = softmax(x, -1);
  std::vector<bool> materialized(g.size(), false);
  materialized[static_cast<size_t>(y.edge().node)] = true;
  for (NodeId id : g.input_ids()) materialized[static_cast<size_t>(id)] = true;
  auto count_gpu = [&](bool gpu) {
    KernelFacts f = kernel_facts(g, y.edge().node, materialized, Target{4, 2, gpu});
    int n = 0;
    for (const Knobs& k : neighbours(f, heuristic_knobs(f))) {
      if (k.gpu_reduce < 0 && k.gpu_group == 0) continue;
      ++n;
      std::vector<Action> actions = knob_actions(f, k);
      EXPECT_TRUE(std::any_of(actions.begin(), actions.end(), [](const Action& a) { return a.kind == ActionKind::Gpu; }))
          << k.to_string();
    }
    return n;
  };
  EXPECT_EQ(count_gpu(false), 0);
  EXPECT_EQ(count_gpu(true), 7);  // three modes, four group sizes
}

// The GPU backends under test: OpenCL where the build has it (PoCL here), CUDA
// where cuInit finds a GPU; each test is skipped, and says why, elsewhere.
class GpuBackend : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    std::string name = GetParam();
    if (name == "opencl") {
#ifndef LUMEN_HAVE_OPENCL
      GTEST_SKIP() << "built without OpenCL";
#endif
    } else {
      std::string why;
      if (!cuda::cuda_device_available(&why)) GTEST_SKIP() << why;
    }
  }
  Backend target() const { return std::string(GetParam()) == "cuda" ? Backend::Cuda : Backend::OpenCl; }
  std::shared_ptr<const backend::Backend> object() const {
#ifdef LUMEN_HAVE_OPENCL
    if (target() == Backend::OpenCl) return opencl::OpenClBackend::shared();
#endif
    return cuda::CudaBackend::shared();
  }
};

std::vector<float> values(int64_t n, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = seed;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>((s >> 8) % 2000) / 500.0f - 2.0f;
  }
  return v;
}

Array array_of(const std::vector<float>& v, std::vector<int64_t> shape, DType dtype) {
  Array a(dtype, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) a.set(static_cast<int64_t>(i), v[i]);
  return a;
}

// Builds y(x, w) and checks the GPU program against the interpreter, in both reduction modes.
void check_against_interp(Backend target, const std::function<Tensor(Graph&, const Tensor&, const Tensor&)>& build,
                          DType dtype, double tolerance) {
  for (const char* mode : {"thread", "group", "stage"}) {
    setenv("LUMEN_GPU_REDUCE", mode, 1);
    Graph g;
    Tensor x = g.input("x", {Expr(7), Expr(33)}, dtype), w = g.input("w", {Expr(33), Expr(5)}, dtype);
    g.mark_output(build(g, x, w), "y");
    CompileOptions o;
    o.backend = target;
    Program cl = compile(g, {}, o);
    Program ref = compile(g, {}, {Backend::Interp});
    for (Program* p : {&cl, &ref}) {
      p->set("x", array_of(values(7 * 33, 1), {7, 33}, dtype));
      p->set("w", array_of(values(33 * 5, 2), {33, 5}, dtype));
      p->run();
    }
    const Array& a = cl.get("y");
    const Array& b = ref.get("y");
    ASSERT_EQ(a.numel(), b.numel());
    for (int64_t i = 0; i < a.numel(); ++i) {
      EXPECT_NEAR(a.get(i), b.get(i), tolerance * (1 + std::fabs(b.get(i)))) << mode << " element " << i;
    }
  }
  unsetenv("LUMEN_GPU_REDUCE");
}

TEST_P(GpuBackend, MatmulSoftmaxAndReductionsAgreeWithTheInterpreter) {
  auto f = [](Graph&, const Tensor& x, const Tensor& w) {
    Tensor m = matmul(softmax(x, -1), w);
    return m + x.max_reduce(1).unsqueeze(1).expand({Expr(7), Expr(5)}) * 0.5;
  };
  check_against_interp(target(), f, DType::F32, 1e-5);
}

TEST_P(GpuBackend, HalfPrecisionStorageAgreesWithTheInterpreter) {
  auto f = [](Graph&, const Tensor& x, const Tensor& w) -> Tensor { return matmul(x, w).sqrt().cast(DType::F32) * 1.0; };
  auto exp_inputs = [&](Graph& g, const Tensor& x, const Tensor& w) -> Tensor { return f(g, x.exp(), w.exp()); };
  check_against_interp(target(), exp_inputs, DType::F16, 2e-3);
  check_against_interp(target(), exp_inputs, DType::BF16, 2e-2);
}

TEST_P(GpuBackend, GatherOutOfRangeRaisesAnError) {
  CompileOptions o;
  o.backend = target();
  expect_gather_range_error([&](const Graph& g) { return compile(g, {}, o); });
}

// The gpu action reaches the printed kernel: a work-group of 128 reducing in local memory.
TEST_P(GpuBackend, ScheduleGpuActionPicksModeAndGroupSize) {
  Graph g;
  Tensor x = g.input("x", {Expr(5), Expr(300)});
  g.mark_output(softmax(x, -1), "y");
  compiler::CompilerOptions o;
  o.search.use_cache = false;
  o.choose = [](const Graph& graph, NodeId n, const std::vector<bool>& materialized) {
    std::vector<Action> a = heuristic_actions(graph, n, materialized, Target{4, 2, true});
    a.push_back(Action::gpu(1, 128));
    return a;
  };
  std::vector<Edge> outs = {g.outputs()[0].edge};
  backend::CompiledProgram compiled = compiler::compile(g, outs, o, object()).program;
  EXPECT_NE(compiled.source.find("(group/128/"), std::string::npos) << compiled.source;
  EXPECT_NE(compiled.source.find("lm_red_f[128]"), std::string::npos) << compiled.source;
  auto shared = std::make_shared<const Graph>(g);
  Program cl(shared, g.outputs(), std::make_unique<CompiledExecutor>(std::move(compiled)));
  Program ref = compile(g, {}, {Backend::Interp});
  for (Program* p : {&cl, &ref}) {
    p->set("x", Array::from_floats(values(5 * 300, 4), {5, 300}));
    p->run();
  }
  for (int64_t i = 0; i < 5 * 300; ++i) EXPECT_NEAR(cl.get("y").get(i), ref.get("y").get(i), 1e-6);
}

// With a search budget the schedule search measures GPU candidates on the
// device, each verified against the interpreter before it can win.
TEST_P(GpuBackend, SearchedProgramAgreesWithTheInterpreter) {
  Graph g;
  Tensor x = g.input("x", {Expr(16), Expr(512)});
  g.mark_output(softmax(x, -1), "y");
  CompileOptions o;
  o.backend = target();
  o.search_budget_s = 4;
  o.tuning_cache = false;
  o.graph_search = false;
  Program cl = compile(g, {}, o);
  Program ref = compile(g, {}, {Backend::Interp});
  for (Program* p : {&cl, &ref}) {
    p->set("x", Array::from_floats(values(16 * 512, 5), {16, 512}));
    p->run();
  }
  for (int64_t i = 0; i < 16 * 512; ++i) EXPECT_NEAR(cl.get("y").get(i), ref.get("y").get(i), 1e-6);
  EXPECT_GT(cl.stats()["search_timing_runs"], 0) << cl.report();
  if (std::getenv("SHOW_REPORT")) std::cout << cl.report();
}

// Staged contractions at sizes the blocks and chunks do not divide: batched
// (an outer grid axis), padded windows (reads with validity), 16-bit storage.
TEST_P(GpuBackend, StagedContractionsAgreeWithTheInterpreter) {
  setenv("LUMEN_GPU_REDUCE", "stage", 1);
  struct Case {
    const char* name;
    std::vector<std::vector<int64_t>> shapes;
    std::function<Tensor(const std::vector<Tensor>&)> build;
    DType dtype;
  };
  std::vector<Case> cases = {
      {"bmm", {{3, 37, 45}, {3, 45, 29}}, [](const std::vector<Tensor>& t) { return bmm(t[0], t[1]); }, DType::F32},
      {"conv", {{2, 5, 11, 13}, {7, 5, 3, 3}},
       [](const std::vector<Tensor>& t) { return conv2d(t[0], t[1], std::nullopt, {1, 1}, {1, 1}); }, DType::F32},
      {"hgemm", {{50, 70}, {70, 33}}, [](const std::vector<Tensor>& t) { return matmul(t[0], t[1]); }, DType::F16},
  };
  for (const Case& c : cases) {
    Graph g;
    std::vector<Tensor> in;
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      std::vector<Expr> shape(c.shapes[i].begin(), c.shapes[i].end());
      in.push_back(g.input("x" + std::to_string(i), shape, c.dtype));
    }
    g.mark_output(c.build(in).cast(DType::F32), "y");
    compiler::CompilerOptions o;
    o.search.use_cache = false;
    std::vector<Edge> outs = {g.outputs()[0].edge};
    backend::CompiledProgram compiled = compiler::compile(g, outs, o, object()).program;
    EXPECT_NE(compiled.source.find("lm_tile0"), std::string::npos) << c.name << compiled.source;
    auto shared = std::make_shared<const Graph>(g);
    Program gpu(shared, g.outputs(), std::make_unique<CompiledExecutor>(std::move(compiled)));
    Program ref = compile(g, {}, {Backend::Interp});
    for (Program* p : {&gpu, &ref}) {
      for (size_t i = 0; i < c.shapes.size(); ++i) {
        int64_t n = 1;
        for (int64_t d : c.shapes[i]) n *= d;
        p->set("x" + std::to_string(i), array_of(values(n, static_cast<uint32_t>(i + 7)), c.shapes[i], c.dtype));
      }
      p->run();
    }
    const Array& a = gpu.get("y");
    const Array& b = ref.get("y");
    ASSERT_EQ(a.numel(), b.numel()) << c.name;
    for (int64_t i = 0; i < a.numel(); ++i) {
      ASSERT_NEAR(a.get(i), b.get(i), 2e-3 * (1 + std::fabs(b.get(i)))) << c.name << " element " << i;
    }
  }
  unsetenv("LUMEN_GPU_REDUCE");
}

TEST_P(GpuBackend, BuiltBinariesAreCached) {
  auto be = object();
  Kernel k = elementwise(3, 5);
  k.name = be->kernel_name(k);
  std::vector<std::string> sources = be->render({k}, 0);
  backend::CompileInfo first, second;
  be->compile(sources, &first);
  auto module = be->compile(sources, &second);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_NE(second.object_path.find(std::string("/") + GetParam() + "/"), std::string::npos) << second.object_path;
  backend::Entry entry = be->load(*module, k.name);
  std::vector<float> in = values(15, 3), out(15, 0.0f);
  void* buffers[2] = {out.data(), in.data()};
  EXPECT_EQ(be->launch(*be->queue(), entry, buffers, nullptr).failed, 0);
  for (size_t i = 0; i < 15; ++i) EXPECT_EQ(out[i], 2 * in[i]);
}

INSTANTIATE_TEST_SUITE_P(OpenClAndCuda, GpuBackend, testing::Values("opencl", "cuda"),
                         [](const testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace lumen
