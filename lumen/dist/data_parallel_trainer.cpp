#include "lumen/dist/data_parallel_trainer.h"

#include <algorithm>

#include "lumen/core/error.h"
#include "lumen/dist/model_plans.h"
#include "lumen/passes/autodiff.h"

namespace lumen::dist {

namespace {

Array scalar(double value) {
  Array a(DType::F32, {});
  a.set(0, value);
  return a;
}

}  // namespace

DataParallelTrainer::DataParallelTrainer(Graph& graph, const Tensor& loss, const std::vector<Tensor>& params,
                                         const std::vector<std::string>& batch_inputs, train::TrainerOptions options,
                                         DistOptions dist)
    : options_(std::move(options)), lr_(options_.lr) {
  if (params.empty()) fail("DataParallelTrainer: no parameters to train");
  for (const Tensor& p : params) params_.push_back(graph.node(p.node_id()).name);
  std::vector<Tensor> grads = passes::gradients(loss, params);
  slots_ = train::add_optimizer(graph, params, grads, options_.optimizer);
  dist.compile = options_.compile;
  Communicator& comm = dist.comm ? *dist.comm : world();
  dist.comm = &comm;
  program_ = std::make_unique<DistProgram>(graph, std::vector<Tensor>{loss}, data_parallel(batch_inputs, comm.size()), dist);
}

float DataParallelTrainer::step(const std::map<std::string, Array>& batch, bool local) {
  for (const auto& [name, value] : batch) {
    if (name == train::kLearningRateInput || name == train::kStepInput || name == train::kApplyInput) {
      fail("DataParallelTrainer.step: the batch sets '", name, "', which the trainer sets itself");
    }
    if (local) {
      program_->set_local(name, value);
    } else {
      program_->set(name, value);
    }
  }
  int accumulation = options_.optimizer.accumulation;
  bool apply = (micro_steps_ + 1) % accumulation == 0;
  auto set = [&](const char* name, double value) {
    if (program_->declares_input(name)) program_->set(name, scalar(value));
  };
  set(train::kLearningRateInput, lr_);
  set(train::kStepInput, static_cast<double>(steps() + 1));
  if (accumulation > 1) set(train::kApplyInput, apply ? 1.0 : 0.0);
  program_->run();
  ++micro_steps_;
  return program_->get(program_->output_names()[0]).to_floats()[0];
}

void DataParallelTrainer::set_parameter(const std::string& name, const Array& value) {
  if (std::find(params_.begin(), params_.end(), name) == params_.end() &&
      std::find(slots_.begin(), slots_.end(), name) == slots_.end()) {
    fail("DataParallelTrainer: no parameter or optimizer state named '", name, "'");
  }
  program_->set(name, value);
}

const Array& DataParallelTrainer::parameter(const std::string& name) const { return program_->state(name); }

}  // namespace lumen::dist
