// DataParallelTrainer — lumen/train's training step over several ranks, each
// on its own slice of the batch. The whole step (loss, autodiff's gradients,
// the optimizer's in-place updates) is one graph, as in train::Trainer; the
// batch inputs are split along axis 0 and propagation does the rest: a
// gradient is a sum over the batch, so it is partial on every rank and is
// all-reduced before the optimizer reads it, in buckets started while the
// backward pass of earlier layers still runs (segments.h). Parameters and
// optimizer slots stay replicated: every rank applies the same update.
//
// The graph is built for the whole batch, so a mean over the batch divides
// by the global size and the step equals a single rank's on the whole batch.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lumen/dist/dist_program.h"
#include "lumen/train/trainer.h"

namespace lumen::dist {

class DataParallelTrainer {
 public:
  // `batch_inputs`: the inputs split along axis 0 (their first dim must be
  // static and a multiple of the rank count). Collective.
  DataParallelTrainer(Graph& graph, const Tensor& loss, const std::vector<Tensor>& params,
                      const std::vector<std::string>& batch_inputs, train::TrainerOptions options, DistOptions dist = {});

  // One step; `batch` holds whole-batch arrays (each rank keeps its slice)
  // unless `local` (then each rank passes its own slice). Returns the loss of
  // the whole batch (the same on every rank).
  float step(const std::map<std::string, Array>& batch, bool local = false);

  void set_lr(double lr) { lr_ = lr; }
  void set_parameter(const std::string& name, const Array& value);
  const Array& parameter(const std::string& name) const;
  int64_t steps() const { return micro_steps_ / options_.optimizer.accumulation; }
  DistProgram& program() { return *program_; }

 private:
  train::TrainerOptions options_;
  std::vector<std::string> params_, slots_;
  std::unique_ptr<DistProgram> program_;
  double lr_;
  int64_t micro_steps_ = 0;
};

}  // namespace lumen::dist
