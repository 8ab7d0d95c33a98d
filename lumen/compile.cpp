#include "lumen/compile.h"

#include <chrono>
#include <map>
#include <cmath>
#include <random>
#include <cstdio>
#include <cstdlib>

#include "lumen/core/debug_flags.h"
#include "lumen/core/error.h"
#include "lumen/backend/cpu/cpu_backend.h"
#include "lumen/backend/cpu/isa.h"
#include "lumen/backend/interp/interpreter.h"
#include "lumen/backend/cuda/cuda_backend.h"
#ifdef LUMEN_HAVE_OPENCL
#include "lumen/backend/opencl/opencl_backend.h"
#endif
#include "lumen/compiler/compiler.h"
#include "lumen/compiler/graph_search.h"
#include "lumen/passes/precision.h"
#include "lumen/compiler/int8_dot.h"
#include "lumen/runtime/candidate_rig.h"
#include "lumen/runtime/compiled_executor.h"
#include "lumen/runtime/interp_executor.h"
#include "lumen/runtime/program_timing.h"

namespace lumen {

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::Interp: return "interp";
    case Backend::Cpu: return "cpu";
    case Backend::OpenCl: return "opencl";
    case Backend::Cuda: return "cuda";
  }
  return "?";
}

Backend backend_named(const std::string& name) {
  for (Backend b : {Backend::Cpu, Backend::Interp, Backend::OpenCl, Backend::Cuda}) {
    if (name == backend_name(b)) return b;
  }
  fail("unknown backend '", name, "' (available: cpu, interp, opencl, cuda)");
}

CompileOptions::Recompute recompute_named(const std::string& name) {
  for (auto m : {CompileOptions::Recompute::Auto, CompileOptions::Recompute::None, CompileOptions::Recompute::All}) {
    if (name == recompute_name(m)) return m;
  }
  fail("recompute: unknown mode '", name, "' (available: auto, none, all)");
}

const char* recompute_name(CompileOptions::Recompute mode) {
  switch (mode) {
    case CompileOptions::Recompute::Auto: return "auto";
    case CompileOptions::Recompute::None: return "none";
    case CompileOptions::Recompute::All: return "all";
  }
  return "?";
}

namespace {

// The compiler's recompute options for `options` (LUMEN_RECOMPUTE overrides).
compiler::RecomputeOptions recompute_options(const CompileOptions& options) {
  compiler::RecomputeOptions r;
  CompileOptions::Recompute mode = options.recompute;
  if (const char* v = std::getenv("LUMEN_RECOMPUTE")) mode = recompute_named(v);
  r.mode = mode == CompileOptions::Recompute::None ? compiler::RecomputeOptions::Mode::None
           : mode == CompileOptions::Recompute::All ? compiler::RecomputeOptions::Mode::All
                                                     : compiler::RecomputeOptions::Mode::Auto;
  return r;
}

// The relative RMS error a program with int8 dot products may show against
// the f32 program (CandidateRig::check_approximately). Rounding an activation
// to 8 bits moves each element by at most half a step, max|x| / 254 of its
// block, uniformly: a dot product over K terms errs by about
// sqrt(K / 3) · (max|x| / 254) · rms(w) against a value of about
// sqrt(K) · rms(x) · rms(w), a relative 0.2-0.5% for the random inputs of
// the check (max|x| / rms(x) <= sqrt(3) for uniform values); 3% leaves room
// for a few such layers in a row and still refuses a wrong program (an
// error in a block's scale or a nibble's order moves outputs by tens of %).
constexpr double kInt8DotRelativeRms = 3e-2;

// Whole programs too large to interpret are checked against the f32 program
// with random weights, which deep models amplify: SmolLM2's 30 random layers
// turn int8 activations into a relative RMS of 0.25. There the whole-program
// check only refuses garbage (above 0.5: unrelated outputs are ~1.4, NaN
// fails), and each rewritten format and shape is checked on its own (a probe:
// y = x·Wᵀ with the model's weight expression) against the f32 contraction
// (kInt8DotRelativeRms) and against the interpreter on the rewritten probe.
constexpr double kInt8DotLargeGraphRms = 0.5;

Program compile_program(const Graph& graph, const std::vector<Tensor>& outputs, const CompileOptions& options);

Array random_like(const Node& n, std::mt19937& rng) {
  std::vector<int64_t> shape;
  for (const Expr& d : n.shape) shape.push_back(d.value());
  Array a(n.dtype, shape);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> scale(0.002f, 0.02f);
  bool is_scale = n.name.size() > 7 && n.name.compare(n.name.size() - 7, 7, ".scales") == 0;
  bool is_min = n.name.size() > 5 && n.name.compare(n.name.size() - 5, 5, ".mins") == 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (is_scale) a.set(i, scale(rng));
    else if (is_min) a.set(i, -8 * scale(rng));
    else if (n.dtype == DType::I8) a.set(i, static_cast<double>(static_cast<int>(rng() % 255) - 127));
    else if (n.dtype == DType::U8) a.set(i, static_cast<double>(rng() % 256));
    else a.set(i, normal(rng));
  }
  return a;
}

// Throws naming the probe where a rewritten contraction is wrong (see kInt8DotLargeGraphRms).
void check_int8_probes(const std::vector<compiler::Int8DotProbe>& probes, Backend backend) {
  for (const compiler::Int8DotProbe& p : probes) {
    std::mt19937 rng(1234);
    std::map<std::string, Array> inputs;
    for (NodeId id : p.graph.input_ids()) inputs[p.graph.node(id).name] = random_like(p.graph.node(id), rng);
    CompileOptions o;
    o.backend = backend;
    o.int8_dot = CompileOptions::Int8Dot::Off;
    o.graph_search = false;
    auto run = [&](const Graph& g, const std::vector<Edge>& edges) {
      std::vector<Tensor> outs;
      for (const Edge& e : edges) outs.push_back(Tensor(const_cast<Graph*>(&g), e.node, e.view));
      Program program = compile_program(g, outs, o);
      for (const auto& [name, a] : inputs) program.set(name, a);
      program.run();
      return program.get(program.output_names().at(0)).clone();
    };
    Array want = run(p.graph, p.outputs), got = run(p.rewritten, p.rewritten_outputs);
    Array own = interp::Interpreter(p.rewritten).run(inputs, p.rewritten_outputs).at(0);
    double err = 0, norm = 0, worst = 0, scale = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      err += (want.get(i) - got.get(i)) * (want.get(i) - got.get(i));
      norm += want.get(i) * want.get(i);
      worst = std::max(worst, std::abs(own.get(i) - got.get(i)));
      scale = std::max(scale, std::abs(own.get(i)));
    }
    if (!(err <= kInt8DotRelativeRms * kInt8DotRelativeRms * norm)) {
      fail("int8 dot products: ", p.label, " differs from the f32 contraction by a relative RMS of ", std::sqrt(err / norm),
           " (allowed ", kInt8DotRelativeRms, ")");
    }
    if (!(worst <= 1e-4 * scale)) {
      fail("int8 dot products: ", p.label, " differs from the interpreter on the rewritten graph by ", worst, " (max |y| ",
           scale, ")");
    }
  }
}

CompileOptions::Int8Dot int8_dot_mode(const CompileOptions& options) {
  if (const char* v = std::getenv("LUMEN_INT8_DOT")) {
    std::string s = v;
    if (s == "on" || s == "1") return CompileOptions::Int8Dot::On;
    if (s == "off" || s == "0") return CompileOptions::Int8Dot::Off;
    if (s == "auto") return CompileOptions::Int8Dot::Auto;
    fail("LUMEN_INT8_DOT='", s, "': expected on, off or auto");
  }
  return options.int8_dot;
}

// The Backend object a compiled backend names.
std::shared_ptr<const backend::Backend> backend_object(Backend b) {
  switch (b) {
    case Backend::OpenCl:
#ifdef LUMEN_HAVE_OPENCL
      return opencl::OpenClBackend::shared();
#else
      fail("backend \"opencl\": this lumen was built without OpenCL (install ocl-icd-opencl-dev and opencl-headers, "
           "then rebuild)");
#endif
    case Backend::Cuda: return cuda::CudaBackend::shared();
    default: return cpu::CpuBackend::shared();
  }
}

Program compile_program(const Graph& graph, const std::vector<Tensor>& outputs, const CompileOptions& options);
}

Program compile(const Graph& graph, const std::vector<Tensor>& outputs, const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  Program p = compile_program(graph, outputs, options);
  p.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return p;
}

namespace {

Program compile_program(const Graph& graph, const std::vector<Tensor>& outputs, const CompileOptions& options) {
  std::vector<NamedOutput> named;
  if (outputs.empty()) {
    named = graph.outputs();
  } else {
    for (const Tensor& t : outputs) {
      if (t.graph() != &graph) fail("compile: an output tensor belongs to a different graph");
      std::string name = "out" + std::to_string(named.size());
      for (const NamedOutput& o : graph.outputs()) {
        if (o.edge == t.edge()) name = o.name;
      }
      named.push_back({name, t.edge()});
    }
  }
  if (named.empty() && graph.updates().empty()) {
    fail("compile: the graph has no outputs and no state updates; pass output tensors or call mark_output()");
  }
  std::vector<Edge> edges;
  for (const NamedOutput& o : named) edges.push_back(o.edge);
  passes::PrecisionReport precision;
  auto copy = std::make_shared<const Graph>(passes::reduce_precision(graph, options.precision, edges, &precision));
  for (size_t i = 0; i < named.size(); ++i) named[i].edge = edges[i];
  const CompileOptions::Int8Dot int8 = int8_dot_mode(options);
  compiler::GraphSearchOptions graph_search_options;
  std::string int8_note;  // for program.report()
  auto probes = std::make_shared<std::vector<compiler::Int8DotProbe>>();
  if (int8 != CompileOptions::Int8Dot::Off) {
    const bool searched = options.backend == Backend::Cpu && options.search_budget_s > 0 && options.graph_search;
    // Auto without a search: the heuristic takes them where the CPU has AVX512-VNNI (CompileOptions::int8_dot).
    const bool heuristic = int8 == CompileOptions::Int8Dot::Auto && options.backend == Backend::Cpu && !searched &&
                           cpu::host_isa().avx512_vnni;
    bool wanted = int8 == CompileOptions::Int8Dot::On || searched || heuristic;
    if (wanted) {
      compiler::Int8DotRewrite r = compiler::int8_dot_products(*copy, edges);
      if (debug_enabled("int8")) {
        std::fprintf(stderr, "int8 dot products: %zu contractions rewritten, %zu refused\n", r.rewritten.size(), r.refused.size());
        for (const std::string& w : r.rewritten) std::fprintf(stderr, "  rewritten: %s\n", w.c_str());
        for (const std::string& w : r.refused) std::fprintf(stderr, "  refused: %s\n", w.c_str());
      }
      if (!r.rewritten.empty()) {
        const cpu::Isa& isa = cpu::host_isa();
        int8_note = "int8 dot products: " + std::to_string(r.rewritten.size()) + " contractions of quantized weights " +
                    (int8 == CompileOptions::Int8Dot::On ? "rewritten"
                     : heuristic                          ? "rewritten (the heuristic's choice where AVX512-VNNI exists)"
                                                          : "rewritten in a graph-search candidate") +
                    (options.backend != Backend::Cpu ? "" : isa.avx512_vnni ? " (vpdpbusd, AVX512-VNNI)"
                                                            : " (no AVX512-VNNI here: exact 16-bit multiply-adds)") + "\n";
      }
      if (!r.rewritten.empty() && (int8 == CompileOptions::Int8Dot::On || heuristic)) {
        copy = std::make_shared<const Graph>(std::move(r.graph));
        edges = r.outputs;
        for (size_t i = 0; i < named.size(); ++i) named[i].edge = edges[i];
      } else if (!r.rewritten.empty()) {
        *probes = std::move(r.probes);
        graph_search_options.extra.push_back(
            {"int8 dot products (" + std::to_string(r.rewritten.size()) + " contractions)", std::move(r.graph), r.outputs});
      }
    }
  }
  switch (options.backend) {
    case Backend::Interp:
      return Program(copy, named, std::make_unique<InterpExecutor>(copy, edges));
    case Backend::Cpu:
    case Backend::OpenCl:
    case Backend::Cuda:
    {
      compiler::CompilerOptions cpu;
      cpu.time_programs = [](const std::vector<const backend::CompiledProgram*>& programs, const Bindings& dims,
                             double seconds) { return time_programs(programs, dims, seconds).median_ms; };
      cpu.search.budget_s = options.search_budget_s;
      cpu.search.use_cache = options.tuning_cache;
      cpu.search.cache_path = options.cache_path;
      cpu.progress = options.progress;
      cpu.search.assumed_dim = options.tune_dim;
      cpu.search.dims = options.tune_dims;
      cpu.recompute = recompute_options(options);
      compiler::ProgramCheck check;
      if (options.graph_search) {
        auto rig = std::make_shared<CandidateRig>(copy, edges, options.tune_dims, options.tune_dim);
        check = [rig](const backend::CompiledProgram& program) { rig->check(program); };
        graph_search_options.approximate_check = [rig, probes, backend = options.backend](const backend::CompiledProgram& program) {
          if (rig->interprets()) {
            rig->check_approximately(program, kInt8DotRelativeRms);
            return;
          }
          rig->check_approximately(program, kInt8DotLargeGraphRms);
          check_int8_probes(*probes, backend);
        };
      }
      compiler::CompileResult compiled = compiler::compile_with_graph_search(*copy, edges, cpu, backend_object(options.backend),
                                                                             check, graph_search_options);
      compiled.program.report = int8_note + compiled.program.report;
      if (options.precision != DType::F32) compiled.program.report = precision.to_string() + compiled.program.report;
      return Program(copy, named, std::make_unique<CompiledExecutor>(std::move(compiled.program)));
    }
  }
  fail("compile: unknown backend");
}

}  // namespace

}  // namespace lumen
