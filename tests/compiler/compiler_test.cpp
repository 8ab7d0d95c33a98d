// Tests for lumen/compiler: the stages produce a CompiledProgram the runtime
// runs to the interpreter's answers, the graph-stage hook runs in order, and
// the CPU backend's interface (capabilities, render, compile, load, launch).
#include "lumen/compiler/compiler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "lumen/backend/cpu/cpu_backend.h"
#include "lumen/backend/cpu/isa.h"
#include "lumen/backend/cpu/thread_pool.h"
#include "lumen/compile.h"
#include "lumen/compiler/graph_search.h"
#include "lumen/compiler/graph_stages.h"
#include "lumen/ops/reduce.h"
#include "lumen/runtime/compiled_executor.h"

namespace lumen {
namespace {

struct SmallGraph {
  Graph g;
  std::vector<Edge> edges;
  std::vector<NamedOutput> named;
  std::map<std::string, Array> inputs;
  Tensor y;
};

// softmax(a @ b) + 1 over odd sizes, and a state written from a's row sums.
std::unique_ptr<SmallGraph> small_graph() {
  auto s = std::make_unique<SmallGraph>();
  Tensor a = s->g.input("a", {Expr(7), Expr(33)});
  Tensor b = s->g.input("b", {Expr(33), Expr(5)});
  Tensor state = s->g.state("rows", {Expr(7)});
  s->g.assign(state, a.sum(1));
  Tensor y = ops::softmax(a.matmul(b), -1) + a.scalar(1);
  s->y = y;
  s->named.push_back({"y", y.edge()});
  s->edges.push_back(y.edge());
  std::vector<float> av, bv;
  for (int i = 0; i < 7 * 33; ++i) av.push_back(std::sin(0.3f * static_cast<float>(i)));
  for (int i = 0; i < 33 * 5; ++i) bv.push_back(std::cos(0.7f * static_cast<float>(i)));
  s->inputs["a"] = Array::from_floats(av, {7, 33});
  s->inputs["b"] = Array::from_floats(bv, {33, 5});
  return s;
}

compiler::CompilerOptions no_cache() {
  compiler::CompilerOptions o;
  o.search.use_cache = false;
  return o;
}

TEST(Compiler, StagesYieldAProgramTheRuntimeRunsLikeTheInterpreter) {
  auto s = small_graph();
  compiler::CompileResult r = compiler::compile(s->g, s->edges, no_cache(), cpu::CpuBackend::shared());
  const backend::CompiledProgram& prog = r.program;
  // The stages' products: kernels with loaded entries, the state write last.
  ASSERT_GE(prog.kernels.size(), 2u);
  ASSERT_EQ(prog.launches.size(), prog.kernels.size());
  for (const backend::Launch& l : prog.launches) {
    EXPECT_NE(l.entry.run, nullptr);
    EXPECT_NE(l.entry.tasks, nullptr);
    EXPECT_EQ(l.buffers.size(), prog.kernels[l.kernel].buffers.size());
  }
  EXPECT_EQ(prog.launches.back().computes, backend::kWriteLaunch);
  EXPECT_EQ(prog.stats.at("kernels"), static_cast<double>(prog.kernels.size()));
  EXPECT_EQ(r.report.kernels, static_cast<int>(prog.kernels.size()));
  EXPECT_NE(prog.source.find("lumen_" + prog.kernels[0].name), std::string::npos);
  EXPECT_STREQ(prog.backend->name(), "cpu");

  auto shared = std::make_shared<const Graph>(s->g);
  Program cpu(shared, s->named, std::make_unique<CompiledExecutor>(r.program));
  CompileOptions o;
  o.backend = Backend::Interp;
  Program ref_named = compile(s->g, {s->y}, o);
  for (const auto& [name, a] : s->inputs) {
    cpu.set(name, a);
    ref_named.set(name, a);
  }
  cpu.run();
  ref_named.run();
  std::vector<float> got = cpu.get("y").to_floats(), want = ref_named.get("out0").to_floats();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "y[" << i << "]";
  std::vector<float> rows = cpu.state("rows").to_floats(), rows_want = ref_named.state("rows").to_floats();
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_NEAR(rows[i], rows_want[i], 1e-4) << "rows[" << i << "]";
}

TEST(Compiler, AChooserReplacesTheSearchForEveryKernel) {
  auto s = small_graph();
  compiler::CompilerOptions o = no_cache();
  int asked = 0;
  o.choose = [&](const Graph&, NodeId, const std::vector<bool>&) {
    ++asked;
    return std::vector<kernel::Action>{};
  };
  compiler::CompileResult r = compiler::compile(s->g, s->edges, o, cpu::CpuBackend::shared());
  int computed = 0;
  for (const backend::Launch& l : r.program.launches) computed += l.computes >= 0 ? 1 : 0;
  EXPECT_EQ(asked, computed);  // state writes take the heuristic, not the chooser
  EXPECT_TRUE(r.search_report.kernels.empty());
}

// The default stages leave a graph with no projection read as heads as it is.
TEST(Compiler, GraphStagesRunInOrderAndTheDefaultsLeaveAPlainGraphAlone) {
  std::vector<compiler::GraphStage> defaults = compiler::graph_stages();
  ASSERT_EQ(defaults.size(), 2u);
  EXPECT_EQ(defaults[0].name, "egraph");
  EXPECT_EQ(defaults[1].name, "epilogue-shape");
  auto s = small_graph();
  Graph g = s->g;
  std::vector<Edge> outs = s->edges;
  compiler::run_graph_stages(defaults, g, outs);
  EXPECT_EQ(g.size(), s->g.size());
  EXPECT_TRUE(outs == s->edges);

  std::string order;
  std::vector<compiler::GraphStage> mine{{"first", [&](Graph&, std::vector<Edge>&) { order += "1"; }},
                                         {"second", [&](Graph&, std::vector<Edge>&) { order += "2"; }}};
  compiler::run_graph_stages(mine, g, outs);
  EXPECT_EQ(order, "12");
}

TEST(CpuBackend, ReportsTheHostsCapabilities) {
  backend::Capabilities c = cpu::CpuBackend::shared()->capabilities();
  EXPECT_EQ(c.name, "cpu");
  EXPECT_EQ(c.f32_lanes, cpu::host_isa().f32_lanes());
  EXPECT_TRUE(c.f32_lanes == 4 || c.f32_lanes == 8 || c.f32_lanes == 16) << c.f32_lanes;
  EXPECT_EQ(c.isa_features, cpu::host_isa().features());
  std::string fingerprint = cpu::CpuBackend::shared()->fingerprint();
  EXPECT_EQ(fingerprint.find(cpu::host_isa().features()), cpu::host_isa().model.size() + 1) << fingerprint;
  EXPECT_EQ(c.threads, cpu::ThreadPool::global()->size());
  EXPECT_GE(c.l1_bytes, 0);
  EXPECT_GE(c.l3_bytes, c.l2_bytes > 0 && c.l3_bytes > 0 ? c.l2_bytes / 64 : 0);
}

// The interface alone (render, compile, load, launch) runs an elementwise kernel.
TEST(CpuBackend, RendersCompilesLoadsAndLaunchesAKernel) {
  Graph g;
  Tensor x = g.input("x", {Expr(37)});
  Tensor y = x * x + x.scalar(2);
  compiler::CompileResult r = compiler::compile(g, {y.edge()}, no_cache(), cpu::CpuBackend::shared());
  ASSERT_EQ(r.program.kernels.size(), 1u);
  std::shared_ptr<const backend::Backend> be = cpu::CpuBackend::shared();
  std::vector<std::string> sources = be->render(r.program.kernels, 1);
  ASSERT_EQ(sources.size(), 1u);
  backend::CompileInfo info;
  std::shared_ptr<backend::Module> module = be->compile(sources, &info);
  EXPECT_FALSE(info.object_path.empty());
  backend::Entry entry = be->load(*module, r.program.kernels[0].name);
  int64_t dims[1] = {0};
  EXPECT_GE(be->tasks(entry, dims), 1);
  std::vector<float> in(37), out(37, -1);
  for (int i = 0; i < 37; ++i) in[static_cast<size_t>(i)] = static_cast<float>(i) - 3;
  // Buffers in the kernel's order: the launch says which graph node each is.
  std::vector<void*> buffers;
  for (NodeId n : r.program.launches[0].buffers) buffers.push_back(n == y.edge().node ? out.data() : in.data());
  backend::LaunchStatus status = be->launch(*be->queue(), entry, buffers.data(), dims);
  EXPECT_EQ(status.failed, 0);
  for (int i = 0; i < 37; ++i) {
    float v = in[static_cast<size_t>(i)];
    EXPECT_FLOAT_EQ(out[static_cast<size_t>(i)], v * v + 2) << i;
  }
  EXPECT_THROW(be->load(*module, "no_such_kernel"), Error);
}

}  // namespace
}  // namespace lumen

namespace lumen {
namespace {

// A graph-level choice cached under older acceptance tests or another rule
// set must not be reused: both are part of its key.
TEST(GraphChoiceKey, NamesTheAcceptanceVersionTheRulesAndTheLimits) {
  Graph g;
  Tensor x = g.input("x", {Expr(8), Expr(8)});
  std::vector<Edge> outputs{(x * x + x).edge()};
  compiler::GraphSearchOptions search;
  std::string key = compiler::graph_choice_key(g, outputs, *cpu::CpuBackend::shared(), search);
  EXPECT_NE(key.find("v" + std::to_string(compiler::kGraphChoiceVersion) + " "), std::string::npos) << key;
  EXPECT_NE(key.find(" mul-distribute"), std::string::npos) << key;
  compiler::GraphSearchOptions other = search;
  other.limits.max_nodes += 1;
  EXPECT_NE(key, compiler::graph_choice_key(g, outputs, *cpu::CpuBackend::shared(), other));
}

}  // namespace
}  // namespace lumen
