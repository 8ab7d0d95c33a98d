// compile(graph, options) -> Program: the one entry that wires the layers.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lumen/core/graph.h"
#include "lumen/core/tensor.h"
#include "lumen/runtime/program.h"

namespace lumen {

// Interp: the reference interpreter; Cpu: generated C on the host; OpenCl:
// the GPU lowering as OpenCL C on an OpenCL device (PoCL runs it on the CPU);
// Cuda: the GPU lowering as CUDA C (NVRTC), run where cuInit finds a GPU.
enum class Backend { Interp, Cpu, OpenCl, Cuda };

struct CompileOptions {
  Backend backend = Backend::Cpu;
  // Schedule search (cpu): seconds to spend measuring candidate schedules.
  // 0 uses heuristic schedules, and the tuning cache's results where it has them.
  double search_budget_s = 0;
  bool tuning_cache = true;
  std::string cache_path;   // default: LUMEN_CACHE_DIR/tuning.db
  bool progress = false;    // live progress on stderr when a terminal (kernels, search time), then a summary line
  int64_t tune_dim = 64;    // dynamic dims take this value while tuning ...
  std::map<std::string, int64_t> tune_dims;  // ... unless given here by name (representative sizes)
  // With a search budget: the graph-level search (lumen/compiler/graph_search.h)
  // measures the best few programs the e-graph rewrites extract and keeps the
  // fastest verified one. Budget 0 skips it.
  bool graph_search = true;
  // Compute precision (lumen/passes/precision.h): F32, or BF16 / F16 — every
  // contraction (matmul, attention's products) takes operands rounded to it,
  // accumulated in f32; everything else stays f32. Every backend, the
  // interpreter included, runs the rewritten graph. passes::precision_named
  // reads "fp32" / "bf16" / "fp16".
  DType precision = DType::F32;
  // Integer dot products for block-quantized weights (lumen/compiler/int8_dot.h:
  // the activation rounded to 8 bits per block of 32, then u8 x i8 dot
  // products, vpdpbusd where the CPU has AVX512-VNNI). Auto: with a search
  // budget and the graph search on, the rewritten program is a candidate the
  // graph search verifies and times against the f32 one; with budget 0 the
  // heuristic takes it where the CPU has AVX512-VNNI (every decode measured
  // there ran faster with it or level: Q4_K_M 1.7-3.3x, Q4_0 1.65-2.7x, Q8_0
  // 0.98-1.29x the f32 path) as On does (without the graph search's probe
  // check: it runs each format and shape through the interpreter, 14 s for a
  // 110M model), and keeps exact f32 numerics elsewhere. On: always rewrite;
  // Off: never (the Python runner's default).
  // LUMEN_INT8_DOT=on|off|auto overrides it.
  enum class Int8Dot { Auto, On, Off };
  Int8Dot int8_dot = Int8Dot::Auto;
  // Keep or recompute (lumen/compiler/recompute_stage.h): a value read far
  // from where it is made (a training step's forward activations, read by the
  // backward pass) may be computed again by its late readers from values kept
  // anyway, freeing its buffer in between. Auto: values costing at most a few
  // dozen ALU ops per element, where that lowers the arena's foreseen largest
  // live set; All: every value that can be, whatever it costs; None: keep
  // every value. recompute_named reads "auto" / "all" / "none";
  // LUMEN_RECOMPUTE overrides it. program.report() lists what was recomputed.
  enum class Recompute { Auto, None, All };
  Recompute recompute = Recompute::Auto;
};

// Compiles the graph's marked outputs, or `outputs` when given (named out0,
// out1, ... unless they are also marked outputs). The graph is copied: later
// changes to it do not affect the Program.
Program compile(const Graph& graph, const std::vector<Tensor>& outputs = {}, const CompileOptions& options = {});

const char* backend_name(Backend backend);
// "auto", "none", "all"; throws Error for any other name.
CompileOptions::Recompute recompute_named(const std::string& name);
const char* recompute_name(CompileOptions::Recompute mode);
// The backend a name stands for ("cpu", "interp", "opencl", "cuda"); throws Error for any other name.
Backend backend_named(const std::string& name);

}  // namespace lumen
