// `lumen run model.onnx`: imports an ONNX model, compiles it, runs it on the
// given inputs (.npy files) or random ones, and prints each output's shape
// and the time per run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>

#include "lumen/core/error.h"
#include "lumen/models/onnx_program.h"
#include "lumen/passes/precision.h"
#include "tools/lumen/commands.h"
#include "tools/lumen/npy_file.h"

namespace lumen::tools {

namespace {

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs, dims;
  std::string backend = "cpu";
  double budget = 0;
  int runs = 10;
  std::string precision = "fp32";
};

std::pair<std::string, std::string> split_pair(const std::string& text, const char* what) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) fail("run: ", what, " '", text, "' must be NAME=VALUE");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

// Random data for an input: floats uniform in [-1, 1), integers 0, bools false.
Array random_input(const Node& input, const Bindings& dims, std::mt19937& rng) {
  std::vector<int64_t> shape;
  for (const Expr& d : input.shape) shape.push_back(evaluate(d, dims));
  Array a(input.dtype, shape);
  if (is_float(input.dtype)) {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int64_t k = 0; k < a.numel(); ++k) a.set(k, u(rng));
  }
  return a;
}

void run_model(const RunOptions& o) {
  onnx::Model model = onnx::load(o.model);
  std::printf("%s: opset %d%s, %zu inputs, %zu outputs, %zu weights\n", o.model.c_str(), model.opset,
              model.producer.empty() ? "" : (", from " + model.producer).c_str(), model.inputs.size(),
              model.outputs.size(), model.weights.size());
  std::map<std::string, Array> given;
  for (const std::string& spec : o.inputs) {
    auto [name, file] = split_pair(spec, "--input");
    if (std::find(model.inputs.begin(), model.inputs.end(), name) == model.inputs.end()) {
      fail("run: the model has no input '", name, "' (its inputs: ", [&] {
        std::string s;
        for (const auto& i : model.inputs) s += (s.empty() ? "" : ", ") + i;
        return s;
      }(), ")");
    }
    given[name] = read_npy(file);
  }
  Bindings dims;
  for (const std::string& spec : o.dims) {
    auto [name, value] = split_pair(spec, "--dim");
    dims[name] = std::stoll(value);
  }
  for (const std::string& d : model.graph->dim_names()) dims.emplace(d, 1);  // unbound dynamic dims: 1
  CompileOptions c;
  c.backend = backend_named(o.backend);
  c.search_budget_s = o.budget;
  c.progress = true;
  c.precision = passes::precision_named(o.precision);
  Program p = onnx::compile(model, c);
  std::mt19937 rng(0);
  for (const std::string& name : model.inputs) {
    auto it = given.find(name);
    p.set(name, it != given.end() ? it->second : random_input(p.graph().node(p.graph().find_input(name)), dims, rng));
  }
  std::vector<double> times;
  for (int k = 0; k < std::max(1, o.runs) + 1; ++k) {
    auto start = std::chrono::steady_clock::now();
    p.run();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (k > 0) times.push_back(ms);  // the first run warms up
  }
  for (const std::string& name : model.outputs) {
    const Array& a = p.get(name);
    std::printf("  %s: %s %s\n", name.c_str(), shape_string(a.shape()).c_str(), dtype_name(a.dtype()));
  }
  std::sort(times.begin(), times.end());
  std::printf("compile %.2f s, run %.3f ms (median of %zu, %s)\n", p.compile_seconds, times[times.size() / 2],
              times.size(), p.backend_name());
}

}  // namespace

void add_run_command(CLI::App& app) {
  static RunOptions o;
  CLI::App* cmd = app.add_subcommand("run", "Run an ONNX model: output shapes and time per run");
  cmd->add_option("model", o.model, "The .onnx file")->required();
  cmd->add_option("--input", o.inputs, "NAME=FILE.npy for an input (others get random values)");
  cmd->add_option("--dim", o.dims, "NAME=VALUE for a dynamic dim (dim_param); unbound ones are 1");
  cmd->add_option("--backend", o.backend, "cpu or interp")->check(CLI::IsMember({"cpu", "interp"}));
  cmd->add_option("--budget", o.budget, "Schedule search budget in seconds (0: heuristic schedules)");
  cmd->add_option("--precision", o.precision, "fp32, bf16 or fp16: matmuls take operands rounded to it, accumulated in fp32")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  cmd->add_option("--runs", o.runs, "Timed runs after one warm-up run")->check(CLI::PositiveNumber);
  cmd->callback([] { run_model(o); });
}

}  // namespace lumen::tools
