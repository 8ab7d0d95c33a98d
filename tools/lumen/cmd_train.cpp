// `lumen train TEXT`: trains a character-level GPT (lumen/models/char_gpt)
// on a text file with lumen's trainer (autodiff as a graph pass, the
// optimizer as graph updates, one compiled Program), printing a progress line
// (step, loss, learning rate, steps/s, tokens/s) every --log-every steps and
// validation losses, saving and resuming safetensors checkpoints, and
// sampling text from the trained model.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>

#include "lumen/backend/cpu/thread_pool.h"
#include "lumen/compile.h"
#include "lumen/core/error.h"
#include "lumen/models/char_gpt.h"
#include "lumen/models/sampling.h"
#include "lumen/train/state_parameters.h"
#include "lumen/train/text_dataset.h"
#include "lumen/train/trainer.h"
#include "tools/lumen/commands.h"

namespace lumen::tools {

namespace {

struct TrainArgs {
  std::string file, save, resume, optimizer = "adamw", schedule = "cosine", backend = "cpu";
  models::CharGptConfig model;
  int64_t batch = 16, steps = 200, warmup = 0, accumulate = 1, log_every = 10, eval_every = 0, eval_batches = 8;
  int64_t sample = 0, threads = 0;
  double lr = 1e-3, min_lr = -1, momentum = 0.9, weight_decay = 0.01, clip = 1.0, temperature = 0.8, budget = 0;
  uint64_t seed = 0;
};

// Linear warm-up to `lr`, then constant or a cosine decay to `min_lr` at the last step.
double learning_rate(const TrainArgs& a, int64_t step) {
  if (step < a.warmup) return a.lr * static_cast<double>(step + 1) / static_cast<double>(a.warmup);
  if (a.schedule == "constant") return a.lr;
  double floor = a.min_lr >= 0 ? a.min_lr : a.lr / 10;
  double progress = static_cast<double>(step - a.warmup) / static_cast<double>(std::max<int64_t>(1, a.steps - a.warmup));
  return floor + 0.5 * (a.lr - floor) * (1 + std::cos(M_PI * std::min(progress, 1.0)));
}

// A forward-only program of the same model with its parameters as inputs:
// `batch` windows -> mean loss (validation), or one window -> the last
// position's logits (sampling).
struct Forward {
  Graph graph;
  std::optional<models::CharGpt> model;
  Tensor out;
  std::optional<Program> program;

  Forward(const models::CharGptConfig& config, int64_t batch, bool loss, const CompileOptions& options) {
    model.emplace(graph, config);
    Tensor tokens = graph.input("tokens", {Expr(batch), Expr(config.context)}, DType::I32);
    if (loss) {
      out = model->loss(tokens, graph.input("targets", {Expr(batch), Expr(config.context)}, DType::I32));
    } else {
      out = model->logits(tokens).slice(1, Expr(config.context - 1), Expr(config.context));
    }
    program.emplace(compile(graph, {out}, options));
  }

  void load(const train::Trainer& trainer) {
    for (const auto& [name, t] : model->parameters()) program->set(name, trainer.parameter(name));
  }
};

double validation_loss(Forward& eval, const train::Trainer& trainer, const train::TextDataset& data, const TrainArgs& a) {
  eval.load(trainer);
  std::mt19937_64 rng(a.seed + 1);  // the same windows at every evaluation
  double total = 0;
  for (int64_t i = 0; i < a.eval_batches; ++i) {
    auto [tokens, targets] = data.batch(train::Split::Validation, a.batch, rng);
    eval.program->set("tokens", tokens);
    eval.program->set("targets", targets);
    eval.program->run();
    total += eval.program->get(eval.out).to_floats()[0];
  }
  return total / static_cast<double>(a.eval_batches);
}

// `a.sample` characters continuing `start` (context characters), one forward pass each.
std::string sample_text(Forward& next, const train::Trainer& trainer, const train::TextDataset& data,
                        const std::string& start, const TrainArgs& a) {
  next.load(trainer);
  std::vector<int32_t> window = data.encode(start);
  models::SamplingOptions options;
  options.temperature = a.temperature;
  options.seed = a.seed;
  models::Sampler sampler(options);
  std::vector<int32_t> generated;
  Array tokens(DType::I32, {1, a.model.context});
  for (int64_t i = 0; i < a.sample; ++i) {
    size_t from = window.size() - static_cast<size_t>(a.model.context);
    for (int64_t t = 0; t < a.model.context; ++t) tokens.set(t, window[from + static_cast<size_t>(t)]);
    next.program->set("tokens", tokens);
    next.program->run();
    int32_t id = sampler(next.program->get(next.out).to_floats());
    window.push_back(id);
    generated.push_back(id);
  }
  return data.decode(generated);
}

train::TrainerOptions trainer_options(const TrainArgs& a, const CompileOptions& compile) {
  train::TrainerOptions o;
  o.optimizer.kind = a.optimizer == "sgd" ? train::OptimizerKind::Sgd : train::OptimizerKind::AdamW;
  o.optimizer.weight_decay = a.weight_decay;
  if (a.optimizer == "sgd") o.optimizer.momentum = a.momentum;
  o.optimizer.clip_norm = a.clip;
  o.optimizer.accumulation = static_cast<int>(a.accumulate);
  o.lr = learning_rate(a, 0);
  o.compile = compile;
  return o;
}

void run_train_command(TrainArgs a) {
  if (a.threads > 0) cpu::ThreadPool::set_global_threads(static_cast<int>(a.threads));
  train::TextDataset data = train::TextDataset::from_file(a.file, a.model.context);
  a.model.vocab = data.vocab_size();
  CompileOptions options;
  options.backend = backend_named(a.backend);
  options.search_budget_s = a.budget;

  auto started = std::chrono::steady_clock::now();
  Graph g;
  std::optional<models::CharGpt> model;
  {
    train::StateParameters state;
    nn::ScopedParameterSource scope(state);
    model.emplace(g, a.model);
  }
  Tensor tokens = g.input("tokens", {Expr(a.batch), Expr(a.model.context)}, DType::I32);
  Tensor targets = g.input("targets", {Expr(a.batch), Expr(a.model.context)}, DType::I32);
  std::vector<Tensor> params;
  for (const auto& [name, t] : model->parameters()) params.push_back(t);
  std::printf("%s: %lld characters (train %lld, validation %lld), vocabulary of %lld\n", a.file.c_str(),
              static_cast<long long>(data.size(train::Split::Train) + data.size(train::Split::Validation)),
              static_cast<long long>(data.size(train::Split::Train)), static_cast<long long>(data.size(train::Split::Validation)),
              static_cast<long long>(a.model.vocab));
  std::printf("model: GPT, %lld layers, dim %lld, %lld heads, context %lld: %lld parameters; %s, batch %lld\n",
              static_cast<long long>(a.model.layers), static_cast<long long>(a.model.dim), static_cast<long long>(a.model.heads),
              static_cast<long long>(a.model.context), static_cast<long long>(model->parameter_count()), a.optimizer.c_str(),
              static_cast<long long>(a.batch));
  std::fflush(stdout);
  train::Trainer trainer(g, model->loss(tokens, targets), params, trainer_options(a, options));
  if (a.resume.empty()) {
    for (const auto& [name, value] : model->initial_values(a.seed)) trainer.set_parameter(name, value);
  } else {
    trainer.load(a.resume);
    std::printf("resumed from %s at step %lld\n", a.resume.c_str(), static_cast<long long>(trainer.steps()));
  }
  std::optional<Forward> eval;
  if (a.eval_batches > 0) eval.emplace(a.model, a.batch, true, options);
  std::printf("compiled in %.2f s (%s)\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), trainer.program().backend_name());
  std::fflush(stdout);

  std::mt19937_64 rng(a.seed + 2 + static_cast<uint64_t>(trainer.micro_steps()));
  auto loop_start = std::chrono::steady_clock::now();
  int64_t first = trainer.steps(), micro = 0;
  while (trainer.steps() < a.steps) {
    trainer.set_lr(learning_rate(a, trainer.steps()));
    auto [x, y] = data.batch(train::Split::Train, a.batch, rng);
    trainer.step({{"tokens", x}, {"targets", y}});
    ++micro;
    if (micro % a.accumulate != 0) continue;
    int64_t step = trainer.steps();
    bool last = step == a.steps;
    if (a.log_every > 0 && (step % a.log_every == 0 || last)) {
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
      double rate = seconds > 0 ? static_cast<double>(step - first) / seconds : 0;
      std::printf("step %lld/%lld  loss %.4f  lr %.3g  %.2f steps/s  %.0f tokens/s\n", static_cast<long long>(step),
                  static_cast<long long>(a.steps), static_cast<double>(trainer.last_loss()), trainer.lr(), rate,
                  rate * static_cast<double>(a.batch * a.accumulate * a.model.context));
    }
    if (eval && a.eval_every > 0 && step % a.eval_every == 0 && !last) {
      std::printf("step %lld  validation loss %.4f\n", static_cast<long long>(step), validation_loss(*eval, trainer, data, a));
    }
    std::fflush(stdout);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  std::printf("trained %lld steps in %.2f s; last loss %.4f", static_cast<long long>(trainer.steps() - first), seconds,
              static_cast<double>(trainer.last_loss()));
  if (eval) std::printf(", validation loss %.4f", validation_loss(*eval, trainer, data, a));
  std::printf("\n");
  if (!a.save.empty()) {
    trainer.save(a.save);
    std::printf("saved %s (parameters, optimizer state, step %lld)\n", a.save.c_str(), static_cast<long long>(trainer.steps()));
  }
  if (a.sample > 0) {
    std::mt19937_64 pick(a.seed);
    auto [start, unused] = data.batch(train::Split::Validation, 1, pick);
    std::vector<int32_t> ids;
    for (int64_t t = 0; t < a.model.context; ++t) ids.push_back(static_cast<int32_t>(start.get(t)));
    std::string prompt = data.decode(ids);
    Forward next(a.model, 1, false, options);
    std::printf("sample (temperature %g) after: %s\n---\n%s\n---\n", a.temperature, prompt.c_str(),
                sample_text(next, trainer, data, prompt, a).c_str());
  }
}

}  // namespace

void add_train_command(CLI::App& app) {
  static TrainArgs a;
  CLI::App* cmd = app.add_subcommand("train", "Train a character-level GPT on a text file (progress, checkpoints, samples)");
  cmd->add_option("text", a.file, "The text file (bytes are the vocabulary; the last 10% is the validation split)")->required();
  cmd->add_option("--layers", a.model.layers, "Transformer blocks")->check(CLI::PositiveNumber);
  cmd->add_option("--dim", a.model.dim, "Model width")->check(CLI::PositiveNumber);
  cmd->add_option("--heads", a.model.heads, "Attention heads (dividing --dim)")->check(CLI::PositiveNumber);
  cmd->add_option("--context", a.model.context, "Characters per training window")->check(CLI::PositiveNumber);
  cmd->add_option("--batch", a.batch, "Windows per step")->check(CLI::PositiveNumber);
  cmd->add_option("--steps", a.steps, "Optimizer steps in all (a resumed run continues to this count)")->check(CLI::PositiveNumber);
  cmd->add_option("--optimizer", a.optimizer, "adamw or sgd")->check(CLI::IsMember({"adamw", "sgd"}));
  cmd->add_option("--lr", a.lr, "Peak learning rate")->check(CLI::PositiveNumber);
  cmd->add_option("--min-lr", a.min_lr, "Cosine schedule's final learning rate (default: lr / 10)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--schedule", a.schedule, "cosine or constant (after --warmup)")->check(CLI::IsMember({"cosine", "constant"}));
  cmd->add_option("--warmup", a.warmup, "Steps of linear warm-up")->check(CLI::NonNegativeNumber);
  cmd->add_option("--weight-decay", a.weight_decay, "AdamW decoupled decay; SGD L2")->check(CLI::NonNegativeNumber);
  cmd->add_option("--momentum", a.momentum, "SGD momentum")->check(CLI::NonNegativeNumber);
  cmd->add_option("--clip", a.clip, "Clip gradients to this global L2 norm (0: off)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--accumulate", a.accumulate, "Micro-batches per optimizer step")->check(CLI::PositiveNumber);
  cmd->add_option("--seed", a.seed, "Initial weights, batches and sampling");
  cmd->add_option("--log-every", a.log_every, "A progress line every n steps (0: none)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--eval-every", a.eval_every, "Validation loss every n steps (0: at the end only)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--eval-batches", a.eval_batches, "Validation batches per evaluation (0: none)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--save", a.save, "Write a safetensors checkpoint (parameters, optimizer state, step) at the end");
  cmd->add_option("--resume", a.resume, "Start from a checkpoint of the same model and text");
  cmd->add_option("--sample", a.sample, "Characters to generate after training")->check(CLI::NonNegativeNumber);
  cmd->add_option("--temperature", a.temperature, "Sampling temperature (0: greedy)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--budget", a.budget, "Seconds of schedule search (0: heuristic schedules)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--threads", a.threads, "CPU threads (default: all cores)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--backend", a.backend, "cpu or interp")->check(CLI::IsMember({"cpu", "interp"}));
  cmd->callback([] { run_train_command(a); });
}

}  // namespace lumen::tools
