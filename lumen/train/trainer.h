// Trainer — one compiled training step: the model's loss, its gradients
// (passes/autodiff) and the optimizer's in-place updates (optimizer.h) in a
// single Program whose persistent state holds the parameters and the
// optimizer's slots. step(batch) sets the batch, runs, and returns the loss.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "lumen/compile.h"
#include "lumen/train/optimizer.h"

namespace lumen::train {

struct TrainerOptions {
  OptimizerConfig optimizer;
  double lr = 1e-3;        // the "lr" input until set_lr() changes it (schedules)
  CompileOptions compile;  // backend, search budget, ...
  int log_every = 0;       // > 0: a progress line (step, loss, steps/s) on stderr every n optimizer steps
};

class Trainer {
 public:
  // `params` are whole f32 state tensors of `graph` (Graph::state) and `loss`
  // a scalar of it. The graph is extended with the backward pass and the
  // updates, then compiled once. Parameters start at zero: set them with
  // set_parameter() or load().
  Trainer(Graph& graph, const Tensor& loss, const std::vector<Tensor>& params, TrainerOptions options);

  // One micro-step on `batch` (input name -> data); with accumulation n the
  // parameters change on every n-th call. Returns this batch's loss.
  float step(const std::map<std::string, Array>& batch);

  void set_lr(double lr) { lr_ = lr; }
  double lr() const { return lr_; }
  int64_t steps() const { return micro_steps_ / options_.optimizer.accumulation; }  // optimizer steps done
  int64_t micro_steps() const { return micro_steps_; }
  float last_loss() const { return last_loss_; }
  double steps_per_second() const;  // optimizer steps per second since construction or load
  std::string progress_line() const;

  void set_parameter(const std::string& name, const Array& value);
  const Array& parameter(const std::string& name) const;
  const std::vector<std::string>& parameter_names() const { return params_; }
  // Parameters and optimizer slots: everything a checkpoint holds.
  std::vector<std::string> state_names() const;

  // Checkpoints (safetensors): parameters, optimizer slots and the step
  // count. load() validates the whole file (names, shapes, dtypes, sizes)
  // before changing anything, so a truncated or mismatched checkpoint is an
  // error and the trainer is left as it was.
  void save(const std::string& path) const;
  void load(const std::string& path);

  Program& program() { return program_; }
  const TrainerOptions& options() const { return options_; }

 private:
  TrainerOptions options_;
  std::vector<std::string> params_;
  std::vector<std::string> slots_;
  Program program_;
  double lr_;
  int64_t micro_steps_ = 0;
  float last_loss_ = 0;
  int64_t timed_from_step_ = 0;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace lumen::train
