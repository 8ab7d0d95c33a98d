// Tests for lumen/backend/cuda: every kernel generated for the bench
// workloads (sgemm, softmax, attention) and a small Llama model compiles
// with NVRTC for sm_80 and sm_90, and ptxas's resource report stays within
// the architectures' limits. No GPU is needed; where cuInit finds none, the
// runnable backend says so with a clear Error. Where a GPU exists, the
// workloads also run on it against the reference interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "lumen/backend/cuda/cuda_backend.h"
#include "lumen/backend/cuda/cuda_driver.h"
#include "lumen/compiler/compiler.h"
#include "lumen/compile.h"
#include "lumen/models/llama.h"
#include "lumen/ops/attention.h"
#include "lumen/ops/linalg.h"
#include "lumen/ops/math.h"
#include "lumen/ops/reduce.h"

namespace lumen {
namespace {

using namespace lumen::ops;

std::vector<Edge> outputs_of(const Graph& g) {
  std::vector<Edge> out;
  for (const NamedOutput& o : g.outputs()) out.push_back(o.edge);
  return out;
}

struct Workload {
  std::string name;
  Graph graph;
};

// The bench workloads at full size (`small`: sizes the interpreter checks in seconds).
std::vector<Workload> workloads(bool small = false) {
  std::vector<Workload> out;
  {
    Graph g;
    int64_t m = small ? 200 : 1024, k = small ? 300 : 1024, n = small ? 260 : 1024;
    Tensor a = g.input("a", {Expr(m), Expr(k)}), b = g.input("b", {Expr(k), Expr(n)});
    g.mark_output(matmul(a, b));
    out.push_back({"sgemm_1024", std::move(g)});
  }
  {  // 16-bit storage: the hardware's conversions, staged tiles of f16 operands
    Graph g;
    int64_t m = small ? 130 : 1024, k = small ? 200 : 1024;
    Tensor a = g.input("a", {Expr(m), Expr(k)}, DType::F16), b = g.input("b", {Expr(k), Expr(m)}, DType::F16);
    g.mark_output(matmul(a, b), "y");
    out.push_back({"hgemm", std::move(g)});
  }
  {
    Graph g;
    int64_t n = small ? 1000 : 4096;
    g.mark_output(softmax(g.input("x", {Expr(small ? 300 : 4096), Expr(n)}), -1));
    out.push_back({"softmax_4096", std::move(g)});
  }
  for (bool causal : {false, true}) {
    Graph g;
    int64_t s = small ? 96 : 1024;
    Tensor q = g.input("q", {Expr(1), Expr(8), Expr(s), Expr(64)});
    Tensor k = g.input("k", {Expr(1), Expr(8), Expr(s), Expr(64)});
    Tensor v = g.input("v", {Expr(1), Expr(8), Expr(s), Expr(64)});
    g.mark_output(scaled_dot_product_attention(q, k, v, std::nullopt, causal));
    out.push_back({causal ? "attention_causal" : "attention", std::move(g)});
  }
  {  // 64-bit values: i64 indices past 2^31 and f64 math, reductions over rows (work-group trees) and points
    Graph g;
    Tensor x = g.input("x", {Expr(64), Expr(4096)});
    Tensor wide = x.cast(DType::F64);
    g.mark_output(sum(exp(wide * wide.scalar(0.5)), {1}), "f64_sum");
    g.mark_output(amax(wide, {1}), "f64_max");
    g.mark_output(argmax(x, 1) + x.scalar(3000000000.0).cast(DType::I64), "i64_index");
    out.push_back({"dtype64", std::move(g)});
  }
  {
    models::LlamaConfig c;
    c.vocab = 64;
    c.dim = 64;
    c.layers = 2;
    c.heads = 4;
    c.kv_heads = 2;
    c.head_dim = 16;
    c.hidden = 96;
    c.validate();
    Graph g;
    models::Llama model(g, c);
    Tensor tokens = g.input("tokens", {Expr(1), g.dim("seq")}, DType::I32);
    g.mark_output(model.step(tokens, g.dim("past"), 128), "logits");
    out.push_back({"llama", std::move(g)});
  }
  return out;
}

// Random inputs for every input of `g` at these dims (integers in [0, 64): token ids).
void fill_inputs(const Graph& g, const Bindings& dims, std::vector<Program*> programs) {
  uint32_t seed = 7;
  for (NodeId id : g.input_ids()) {
    const Node& n = g.node(id);
    std::vector<int64_t> shape;
    for (const Expr& d : n.shape) shape.push_back(evaluate(d, dims));
    Array a(n.dtype, shape);
    for (int64_t i = 0; i < a.numel(); ++i) {
      seed = seed * 1664525u + 1013904223u;
      double unit = static_cast<double>(seed >> 8) / static_cast<double>(1u << 24);
      a.set(i, is_float(n.dtype) ? unit * 2 - 1 : std::floor(unit * 64));
    }
    for (Program* p : programs) p->set(n.name, a);
  }
  for (const std::string& d : g.dim_names()) {
    for (Program* p : programs) p->bind(d, dims.at(d));
  }
}

// sm_80 and sm_90: 255 registers a thread, 64K registers and 48 KiB static shared memory a block.
void check_limits(const cuda::NvrtcResult& r, const std::string& what, int group_size) {
  ASSERT_FALSE(r.resources.empty()) << what << ": ptxas reported nothing:\n" << r.log;
  for (const auto& [entry, res] : r.resources) {
    EXPECT_GT(res.registers, 0) << what << " " << entry;
    EXPECT_LE(res.registers, 255) << what << " " << entry;
    EXPECT_LE(int64_t{res.registers} * group_size, 65536) << what << " " << entry;
    EXPECT_LE(res.shared_bytes, 48 * 1024) << what << " " << entry;
  }
}

TEST(CudaNvrtc, EveryWorkloadKernelCompilesForSm80AndSm90WithinLimits) {
  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_FAIL() << "NVRTC is required for this test: " << why;
  for (Workload& w : workloads()) {
    for (const std::string arch : {"sm_80", "sm_90"}) {
      auto backend = std::make_shared<cuda::CudaBackend>(arch);
      compiler::CompilerOptions o;
      o.search.use_cache = false;
      compiler::CompileResult r = compiler::compile(w.graph, outputs_of(w.graph), o, backend);
      ASSERT_FALSE(r.program.kernels.empty()) << w.name;
      const cuda::NvrtcResult& built = cuda::CudaBackend::compiled(*r.program.module);
      EXPECT_FALSE(built.cubin.empty()) << w.name << " " << arch;
      EXPECT_NE(built.ptx.find(".target " + arch), std::string::npos) << w.name << " " << arch;
      // One report per distinct kernel: every entry was compiled.
      std::set<std::string> names;
      for (const kernel::Kernel& k : r.program.kernels) names.insert("lumen_" + k.name);
      for (const std::string& n : names) EXPECT_TRUE(built.resources.count(n)) << w.name << " " << arch << " " << n;
      check_limits(built, w.name + " " + arch, 256);  // the largest work-group the heuristic launches (staged)
      if (w.name == "dtype64") {  // printed in 64 bits, not narrowed
        EXPECT_NE(r.program.source.find("const double"), std::string::npos) << r.program.source;
        EXPECT_NE(r.program.source.find("lm_maxd("), std::string::npos) << r.program.source;
        EXPECT_NE(r.program.source.find("const lm_i64 v"), std::string::npos) << r.program.source;
      }
    }
  }
}

// On a GPU: every workload (at sizes the interpreter checks quickly) runs on
// the device and agrees with the reference interpreter.
TEST(CudaRun, EveryWorkloadAgreesWithTheInterpreter) {
  std::string why;
  if (!cuda::cuda_device_available(&why)) GTEST_SKIP() << why;
  for (Workload& w : workloads(true)) {
    Program gpu = compile(w.graph, {}, {Backend::Cuda});
    Program ref = compile(w.graph, {}, {Backend::Interp});
    fill_inputs(w.graph, {{"seq", 5}, {"past", 3}}, {&gpu, &ref});
    for (int run = 0; run < 2; ++run) {  // a second run reuses the first's memory (and state: the KV cache)
      gpu.run();
      ref.run();
      for (const NamedOutput& o : w.graph.outputs()) {
        const Array& a = gpu.get(o.name);
        const Array& b = ref.get(o.name);
        ASSERT_EQ(a.shape(), b.shape()) << w.name << " " << o.name;
        int64_t bad = 0;
        for (int64_t i = 0; i < a.numel(); ++i) {
          double tolerance = w.name == "hgemm" ? 2e-3 : 1e-4;  // f16 outputs: sums in another order may round a ulp apart
          if (std::fabs(a.get(i) - b.get(i)) > tolerance * (1 + std::fabs(b.get(i))) && bad++ < 5) {
            ADD_FAILURE() << w.name << " " << o.name << " element " << i << ": cuda " << a.get(i) << ", interpreter "
                          << b.get(i);
          }
        }
        EXPECT_EQ(bad, 0) << w.name << " " << o.name << " of " << a.numel() << ", run " << run;
      }
    }
  }
}

TEST(CudaNvrtc, PtxasReportIsParsedPerEntry) {
  std::string log =
      "ptxas info    : Compiling entry function 'lumen_ka' for 'sm_80'\n"
      "ptxas info    : Function properties for lumen_ka\n"
      "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, 512 bytes smem, 380 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'lumen_kb' for 'sm_80'\n"
      "ptxas info    : Used 12 registers, 380 bytes cmem[0]\n";
  auto r = cuda::parse_ptxas_report(log);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r["lumen_ka"].registers, 40);
  EXPECT_EQ(r["lumen_ka"].shared_bytes, 512);
  EXPECT_EQ(r["lumen_ka"].spill_bytes, 8);
  EXPECT_EQ(r["lumen_kb"].registers, 12);
  EXPECT_EQ(r["lumen_kb"].shared_bytes, 0);
}

TEST(CudaNvrtc, CompileOnlyBackendRefusesToLaunch) {
  Graph g;
  g.mark_output(softmax(g.input("x", {Expr(4), Expr(8)}), -1));
  auto backend = std::make_shared<cuda::CudaBackend>("sm_80");
  compiler::CompilerOptions o;
  o.search.use_cache = false;
  compiler::CompileResult r = compiler::compile(g, outputs_of(g), o, backend);
  std::vector<float> x(32, 1.0f), y(32, 0.0f);
  std::vector<void*> buffers(r.program.kernels[r.program.launches[0].kernel].buffers.size(), x.data());
  int64_t dims[1] = {0};
  try {
    backend->launch(*std::make_shared<backend::Queue>(), r.program.launches[0].entry, buffers.data(), dims);
    FAIL() << "a compile-only backend launched";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("compiled for sm_80 only"), std::string::npos) << e.what();
  }
}

TEST(CudaDriver, WithoutAGpuCompileSaysSo) {
  std::string why;
  if (cuda::cuda_device_available(&why)) GTEST_SKIP() << "a CUDA device exists here";
  Graph g;
  Tensor x = g.input("x", {Expr(4)});
  g.mark_output(x * 2.0);
  try {
    compile(g, {}, {Backend::Cuda});
    FAIL() << "compile for cuda succeeded without a device";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cuda:"), std::string::npos) << m;
    EXPECT_NE(m.find("opencl"), std::string::npos) << m;  // says what to use instead
  }
}

}  // namespace
}  // namespace lumen
