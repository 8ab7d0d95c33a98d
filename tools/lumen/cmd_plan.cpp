// `lumen plan`: the plan search for a Llama-family model over N ranks — every
// tensor/pipeline/data-parallel layout the model admits, with predicted step
// time and memory per rank; --run (under mpirun with N ranks) runs the plans
// lumen can run and prints measured next to predicted.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "lumen/core/error.h"
#include "lumen/core/stopwatch.h"
#include "tools/lumen/commands.h"
#include "tools/lumen/parallel.h"

namespace lumen::tools {

namespace {

struct Args {
  CommonOptions common;
  std::string preset;
  int ranks = 0;
  bool run = false, no_calibrate = false;
  int64_t prompt = 128, position = 128, sequences = 1, steps = 16;
  double memory_gb = 0;
};

std::vector<int32_t> tokens(int64_t n, int64_t vocab) {
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i) t.push_back(static_cast<int32_t>((i * 7919 + 1) % vocab));
  return t;
}

struct StepTimes {
  double prefill = 0;  // median of 3 prefills of the prompt, seconds
  double decode = 0;   // seconds per decode step from `position`
};

// Times a runner (LlamaRunner or DistLlamaRunner) as the plans are compared.
template <typename Runner>
StepTimes time_steps(Runner& r, const Args& a, int64_t vocab) {
  std::vector<double> prefill;
  for (int i = 0; i < 3; ++i) {
    r.reset();
    auto start = std::chrono::steady_clock::now();
    r.forward(tokens(a.prompt, vocab));
    prefill.push_back(seconds_since(start));
  }
  std::sort(prefill.begin(), prefill.end());
  r.reset();
  r.forward(tokens(a.position, vocab));
  auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < a.steps; ++i) r.forward({static_cast<int32_t>((i * 13 + 5) % vocab)});
  return {prefill[1], seconds_since(start) / static_cast<double>(a.steps)};
}

// The model on one rank (every rank runs its own copy): measured prefill and
// decode against the cost model's single-rank prediction scale its compute.
void calibrate_with_model(dist::MachineModel& m, const dist::LlamaWorkload& w, const Args& a, const DecoderFiles& files) {
  models::LlamaRunnerOptions o;
  o.capacity = std::max(a.common.capacity, std::max(a.prompt, a.position + a.steps) + 1);
  o.compile = a.common.compile();
  o.refuse_unused_weights = files.refuse_unused_weights;
  models::LlamaRunner r(files.config, files.weights, o);
  StepTimes t = time_steps(r, a, files.config.vocab);
  dist::PlanShape single;
  double d = dist::estimate_decode(w, single, m).compute_seconds, p = dist::estimate_prefill(w, single, m).compute_seconds;
  double scales[2] = {t.decode / d, t.prefill / p};
  if (dist::launched_with_ranks()) {  // rank 0's, so every rank ranks alike
    for (double& v : scales) {
      uint64_t bits = 0;
      std::memcpy(&bits, &v, sizeof bits);
      bits = dist::world().all_gather_u64(bits, "sharing the model's single-rank timing")[0];
      std::memcpy(&v, &bits, sizeof bits);
    }
  }
  m.decode_compute_scale = scales[0];
  m.prefill_compute_scale = scales[1];
  char note[160];
  std::snprintf(note, sizeof note, "; scaled by the model's own single-rank run: decode x%.2f, prefill x%.2f", scales[0], scales[1]);
  m.compute_source += note;
}

// Runs one plan: median prefill of the prompt, then decode steps from `position` (seconds per step).
void measure(dist::PlanCandidate& c, const Args& a, const DecoderFiles& files) {
  dist::DistLlamaOptions d;
  d.runner.capacity = std::max(a.common.capacity, std::max(a.prompt, a.position + a.steps) + 1);
  d.runner.compile = a.common.compile();
  d.parallel = c.shape.pp > 1 ? dist::LlamaParallel::Pipeline : dist::LlamaParallel::Tensor;
  dist::DistLlamaRunner r(files.config, files.weights, d);
  StepTimes t = time_steps(r, a, files.config.vocab);
  c.measured_prefill = t.prefill;
  c.measured_decode = t.decode;
}

void plan(Args& a) {
  if (a.common.model.empty() == a.preset.empty()) fail("plan: give a model (-m) or a --preset, not both");
  bool launched = dist::launched_with_ranks();
  int world = launched ? dist::world().size() : 1;
  int ranks = a.ranks > 0 ? a.ranks : world;
  DecoderFiles files;
  dist::LlamaWorkload w;
  if (!a.preset.empty()) {
    w.config = dist::llama_preset(a.preset);
  } else {
    files = load_decoder_files(a.common.model);
    w.config = files.config;
    w.weight_bytes_per_element = static_cast<double>(files.weights->stored_bytes()) /
                                 static_cast<double>(std::max<int64_t>(1, files.config.parameter_count()));
  }
  w.prompt = a.prompt;
  w.position = a.position;
  w.sequences = a.sequences;
  w.capacity = a.common.capacity > 0 ? a.common.capacity : std::min<int64_t>(w.config.max_position, 2048);
  dist::MachineModel m = calibrated_machine(a.common.compile(), !a.no_calibrate);
  m.memory_bytes = a.memory_gb * 1e9;
  if (launched && ranks != world) m.comm_source += " (measured over " + std::to_string(world) + " ranks, modeled for " + std::to_string(ranks) + ")";
  auto ranked = dist::search_llama_plans(w, ranks, m);
  if (a.run) {
    if (files.weights == nullptr) fail("plan: --run needs a model (-m), not a preset");
    if (ranks != world) fail("plan: --run needs as many ranks as planned: mpirun -np ", ranks, " (", world, " running)");
    calibrate_with_model(m, w, a, files);
    ranked = dist::search_llama_plans(w, ranks, m);
    for (dist::PlanCandidate& c : ranked) {
      if (c.shape.runnable() && ranks > 1) measure(c, a, files);
    }
  }
  if (!is_rank0()) return;
  std::printf("%s", dist::format_plans(ranked, w, m).c_str());
  std::printf("chosen (the fastest plan lumen runs): %s\n", dist::best_runnable(ranked).name().c_str());
}

}  // namespace

void add_plan_command(CLI::App& app) {
  static Args a;
  CLI::App* cmd = app.add_subcommand("plan", "Search parallel plans (tensor, pipeline, data parallel) for a Llama model over N ranks");
  a.common.add_to(cmd, false);
  cmd->add_option("--preset", a.preset, "Plan a known shape without weights: llama-110m, llama-7b, llama-70b");
  cmd->add_option("--ranks", a.ranks, "Ranks to plan for (default: those mpirun started); more than exist are modeled")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--simulate", [](int64_t) {}, "Plan only (the default): nothing but calibration runs");
  cmd->add_flag("--run", a.run, "Also run every plan lumen can run (under mpirun -np RANKS) and print measured times");
  cmd->add_flag("--no-calibrate", a.no_calibrate, "Use default compute figures instead of measuring this machine");
  cmd->add_option("--prompt-tokens", a.prompt, "Prefill length")->check(CLI::PositiveNumber);
  cmd->add_option("--position", a.position, "Decode at this many cached positions")->check(CLI::NonNegativeNumber);
  cmd->add_option("--sequences", a.sequences, "Concurrent sequences (data-parallel replicas share them)")->check(CLI::PositiveNumber);
  cmd->add_option("--steps", a.steps, "Decode steps timed by --run")->check(CLI::PositiveNumber);
  cmd->add_option("--memory-gb", a.memory_gb, "Memory per rank; plans that do not fit are ranked last")->check(CLI::NonNegativeNumber);
  cmd->callback([] { plan(a); });
}

}  // namespace lumen::tools
