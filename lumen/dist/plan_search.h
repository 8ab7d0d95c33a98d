// The plan search: every way to lay a Llama-family model over N ranks as
// tensor-parallel x pipeline x data-parallel replicas that the model admits,
// each costed by the cost model (cost_model.h) on measured or default machine
// figures, ranked by predicted decode step time (plans that fit in memory
// first). `lumen plan` prints the table; `--parallel auto` runs the best plan
// lumen can run today. The search is over the plan shape for the whole model
// (every layer split the same way), not per layer.
#pragma once

#include <string>
#include <vector>

#include "lumen/dist/cost_model.h"

namespace lumen::dist {

struct PlanCandidate {
  PlanShape shape;
  StepEstimate decode, prefill;
  double measured_decode = 0, measured_prefill = 0;  // seconds, where the plan was run (0: not run)
};

std::vector<PlanCandidate> search_llama_plans(const LlamaWorkload& w, int ranks, const MachineModel& m);
// The best plan lumen can run (tp or pp over every rank); throws if none.
PlanShape best_runnable(const std::vector<PlanCandidate>& ranked);
// A table: plan, predicted decode and prefill, memory per rank, measured where known, and the machine figures' sources.
std::string format_plans(const std::vector<PlanCandidate>& ranked, const LlamaWorkload& w, const MachineModel& m);

// Llama shapes for planning without weights: "llama-110m" (make bench's),
// "llama-7b" (Llama-2-7B), "llama-70b" (Llama-2-70B, grouped-query).
models::LlamaConfig llama_preset(const std::string& name);

}  // namespace lumen::dist
