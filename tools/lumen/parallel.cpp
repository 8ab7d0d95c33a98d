#include "tools/lumen/parallel.h"

#include "lumen/core/error.h"
#include "lumen/dist/calibration.h"

namespace lumen::tools {

bool is_rank0() { return !dist::launched_with_ranks() || dist::world().rank() == 0; }

dist::MachineModel calibrated_machine(const CompileOptions& compile, bool calibrate) {
  return dist::calibrate(compile, dist::launched_with_ranks() ? &dist::world() : nullptr, calibrate);
}

std::unique_ptr<dist::DistLlamaRunner> open_parallel_decoder(const CommonOptions& o, const DecoderFiles& files,
                                                             const std::string& mode, int64_t prompt_tokens,
                                                             int64_t max_new, std::string* plan_table) {
  dist::DistLlamaOptions d;
  d.runner.capacity = o.capacity;
  d.runner.compile = o.compile();
  d.runner.refuse_unused_weights = files.refuse_unused_weights;
  if (mode == "auto") {
    dist::LlamaWorkload w;
    w.config = files.config;
    w.prompt = std::max<int64_t>(1, prompt_tokens);
    w.position = prompt_tokens + max_new / 2;
    w.capacity = o.capacity > 0 ? o.capacity : std::min<int64_t>(files.config.max_position, 2048);
    w.weight_bytes_per_element = static_cast<double>(files.weights->stored_bytes()) /
                                 static_cast<double>(std::max<int64_t>(1, files.config.parameter_count()));
    dist::MachineModel m = calibrated_machine(d.runner.compile, true);
    auto ranked = dist::search_llama_plans(w, dist::world().size(), m);
    dist::PlanShape best = dist::best_runnable(ranked);
    if (plan_table) *plan_table = dist::format_plans(ranked, w, m) + "running: " + best.name() + "\n";
    d.parallel = best.pp > 1 ? dist::LlamaParallel::Pipeline : dist::LlamaParallel::Tensor;
  } else {
    d.parallel = dist::llama_parallel_named(mode);
  }
  return std::make_unique<dist::DistLlamaRunner>(files.config, files.weights, d);
}

}  // namespace lumen::tools
