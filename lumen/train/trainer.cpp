#include "lumen/train/trainer.h"

#include <algorithm>
#include <cstdio>

#include "lumen/core/error.h"
#include "lumen/passes/autodiff.h"
#include "lumen/train/checkpoint.h"

namespace lumen::train {

namespace {

Array scalar(double value) {
  Array a(DType::F32, {});
  a.set(0, value);
  return a;
}

std::vector<std::string> names_of(const Graph& graph, const std::vector<Tensor>& params) {
  std::vector<std::string> names;
  for (const Tensor& p : params) names.push_back(graph.node(p.node_id()).name);
  return names;
}

// Compiles the loss with its gradients and the optimizer's updates.
Program build(Graph& graph, const Tensor& loss, const std::vector<Tensor>& params, const TrainerOptions& options,
              std::vector<std::string>& slots) {
  if (params.empty()) fail("Trainer: no parameters to train");
  std::vector<Tensor> grads = passes::gradients(loss, params);
  slots = add_optimizer(graph, params, grads, options.optimizer);
  std::vector<Tensor> outputs = {loss};
  return compile(graph, outputs, options.compile);
}

}  // namespace

Trainer::Trainer(Graph& graph, const Tensor& loss, const std::vector<Tensor>& params, TrainerOptions options)
    : options_(std::move(options)),
      params_(names_of(graph, params)),
      program_(build(graph, loss, params, options_, slots_)),
      lr_(options_.lr),
      started_(std::chrono::steady_clock::now()) {}

float Trainer::step(const std::map<std::string, Array>& batch) {
  auto held = program_.lock();
  for (const auto& [name, value] : batch) {
    if (name == kLearningRateInput || name == kStepInput || name == kApplyInput) {
      fail("Trainer.step: the batch sets '", name, "', which the trainer sets itself (use set_lr for the learning rate)");
    }
    program_.set(name, value);
  }
  int accumulation = options_.optimizer.accumulation;
  bool apply = (micro_steps_ + 1) % accumulation == 0;
  program_.set(kLearningRateInput, scalar(lr_));
  program_.set(kStepInput, scalar(static_cast<double>(steps() + 1)));
  if (accumulation > 1) program_.set(kApplyInput, scalar(apply ? 1.0 : 0.0));
  program_.run();
  last_loss_ = program_.get(program_.output_names()[0]).to_floats()[0];
  ++micro_steps_;
  if (options_.log_every > 0 && apply && steps() % options_.log_every == 0) {
    std::fprintf(stderr, "%s\n", progress_line().c_str());
  }
  return last_loss_;
}

double Trainer::steps_per_second() const {
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  return seconds > 0 ? static_cast<double>(steps() - timed_from_step_) / seconds : 0.0;
}

std::string Trainer::progress_line() const {
  char line[160];
  std::snprintf(line, sizeof line, "step %lld  loss %.5f  lr %.3g  %.2f steps/s", static_cast<long long>(steps()),
                static_cast<double>(last_loss_), lr_, steps_per_second());
  return line;
}

void Trainer::set_parameter(const std::string& name, const Array& value) {
  if (std::find(params_.begin(), params_.end(), name) == params_.end() &&
      std::find(slots_.begin(), slots_.end(), name) == slots_.end()) {
    fail("Trainer: no parameter or optimizer state named '", name, "'");
  }
  program_.set(name, value);
}

const Array& Trainer::parameter(const std::string& name) const {
  if (std::find(params_.begin(), params_.end(), name) == params_.end() &&
      std::find(slots_.begin(), slots_.end(), name) == slots_.end()) {
    fail("Trainer: no parameter or optimizer state named '", name, "'");
  }
  return program_.state(name);
}

std::vector<std::string> Trainer::state_names() const {
  std::vector<std::string> names = params_;
  names.insert(names.end(), slots_.begin(), slots_.end());
  return names;
}

void Trainer::save(const std::string& path) const {
  std::vector<std::pair<std::string, Array>> tensors;
  for (const std::string& name : state_names()) tensors.emplace_back(name, program_.state(name));
  save_checkpoint(path, tensors, {{"micro_steps", micro_steps_}}, optimizer_name(options_.optimizer.kind));
}

void Trainer::load(const std::string& path) {
  std::vector<std::pair<std::string, Array>> expected;
  for (const std::string& name : state_names()) expected.emplace_back(name, program_.state(name));
  Checkpoint loaded = load_checkpoint(path, expected, optimizer_name(options_.optimizer.kind));
  for (auto& [name, value] : loaded.tensors) program_.set(name, value);  // all validated: nothing fails from here
  micro_steps_ = loaded.counters.at("micro_steps");
  timed_from_step_ = steps();
  started_ = std::chrono::steady_clock::now();
}

}  // namespace lumen::train
