// `lumen tc FILE --shapes A=64x128 B=128x32`: compiles one tensor
// comprehension for the given shapes, checks it against the interpreter on
// random inputs and reports its median run time.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "lumen/compile.h"
#include "lumen/core/error.h"
#include "lumen/tc/comprehension.h"
#include "tools/lumen/commands.h"

namespace lumen::tools {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("tc: cannot read '", path, "'");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "A=64x128" -> {"A", [64, 128]}; "S=" is a rank-0 tensor.
std::pair<std::string, std::vector<int64_t>> parse_shape(const std::string& spec) {
  auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) fail("tc: --shapes takes NAME=D1xD2x..., got '", spec, "'");
  std::vector<int64_t> dims;
  std::stringstream s(spec.substr(eq + 1));
  std::string part;
  while (std::getline(s, part, 'x')) {
    try {
      size_t used = 0;
      long long d = std::stoll(part, &used);
      if (used != part.size() || d < 0) throw std::invalid_argument(part);
      dims.push_back(d);
    } catch (const std::exception&) {
      fail("tc: bad size '", part, "' in --shapes '", spec, "' (sizes are non-negative integers: A=64x128)");
    }
  }
  return {spec.substr(0, eq), dims};
}

Array random_input(DType dtype, const std::vector<int64_t>& shape, uint32_t seed) {
  Array a(dtype, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, is_float(dtype) ? dist(rng) : std::floor(dist(rng) * 4 + 4));
  return a;
}

struct TcArgs {
  std::string file, def, backend = "cpu";
  std::vector<std::string> shapes, scalars;
  double search = 0;
  int runs = 20;
  bool check = true;
};

// The graph: one input per tensor parameter, the comprehension's outputs.
std::vector<Tensor> build(Graph& g, const tc::Comprehension& fn, const TcArgs& a, std::map<std::string, Array>& feeds) {
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, double> scalars;
  for (const std::string& s : a.shapes) shapes.insert(parse_shape(s));
  for (const std::string& s : a.scalars) {
    auto eq = s.find('=');
    if (eq == std::string::npos) fail("tc: --scalar takes NAME=VALUE, got '", s, "'");
    try {
      scalars[s.substr(0, eq)] = std::stod(s.substr(eq + 1));
    } catch (const std::exception&) {
      fail("tc: bad number in --scalar '", s, "'");
    }
  }
  std::vector<tc::Arg> args;
  uint32_t seed = 1;
  for (const tc::Param& p : fn.def().params) {
    if (p.scalar) {
      if (!scalars.count(p.name)) fail("tc: ", fn.name(), " needs the scalar ", p.name, ": pass --scalar ", p.name, "=VALUE");
      args.emplace_back(std::in_place_index<1>, scalars[p.name]);
      continue;
    }
    if (!shapes.count(p.name)) fail("tc: ", fn.name(), " needs the shape of ", p.name, ": pass --shapes ", p.name, "=D1xD2...");
    Shape shape;
    for (int64_t d : shapes[p.name]) shape.push_back(Expr(d));
    args.emplace_back(g.input(p.name, shape, p.dtype));
    feeds[p.name] = random_input(p.dtype, shapes[p.name], seed++);
  }
  return fn(args);
}

double max_difference(const Array& a, const Array& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get(i), y = b.get(i);
    if (std::isnan(x) != std::isnan(y)) return INFINITY;
    if (!std::isnan(x)) worst = std::max(worst, std::fabs(x - y) / (1 + std::fabs(y)));
  }
  return worst;
}

void run_tc_command(const TcArgs& a) {
  tc::Comprehension fn = tc::define(read_text(a.file), a.def);
  Graph g;
  std::map<std::string, Array> feeds;
  std::vector<Tensor> outs = build(g, fn, a, feeds);
  CompileOptions options;
  options.backend = backend_named(a.backend);
  options.search_budget_s = a.search;
  Program p = compile(g, outs, options);
  for (auto& [name, value] : feeds) p.set(name, value);
  p.run();
  std::printf("%s: compiled for %s in %.2f s\n", fn.name().c_str(), p.backend_name(), p.compile_seconds);
  if (a.check) {
    Program ref = compile(g, outs, CompileOptions{Backend::Interp});
    for (auto& [name, value] : feeds) ref.set(name, value);
    ref.run();
    for (size_t i = 0; i < outs.size(); ++i) {
      double d = max_difference(p.get(outs[i]), ref.get(outs[i]));
      if (!(d <= 1e-3)) fail("tc: ", fn.def().outputs[i].name, " differs from the interpreter (relative ", d, ")");
    }
  }
  std::vector<double> times;
  for (int i = 0; i < a.runs + 1; ++i) {
    auto start = std::chrono::steady_clock::now();
    p.run();
    if (i > 0) times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  for (size_t i = 0; i < outs.size(); ++i) {
    std::printf("%s: %s %s\n", fn.def().outputs[i].name.c_str(), to_string(outs[i].shape()).c_str(), dtype_name(outs[i].dtype()));
  }
  std::printf("%s%s, median of %d runs: %.4f ms\n", a.check ? "matches the interpreter" : "not checked",
              a.search > 0 ? " (searched)" : "", a.runs, times[times.size() / 2]);
}

}  // namespace

void add_tc_command(CLI::App& app) {
  static TcArgs a;
  CLI::App* cmd = app.add_subcommand("tc", "Compile and time a tensor comprehension (docs/tc.md) for given shapes");
  cmd->add_option("file", a.file, "File holding the comprehension text")->required();
  cmd->add_option("--shapes", a.shapes, "Input shapes: A=64x128 B=128x32 ...")->required();
  cmd->add_option("--scalar", a.scalars, "Scalar parameters: sh=2 eps=1e-5 ...");
  cmd->add_option("--def", a.def, "Which def, when the file holds several");
  cmd->add_option("--backend", a.backend, "cpu or interp")->check(CLI::IsMember({"cpu", "interp"}));
  cmd->add_option("--search", a.search, "Schedule search budget in seconds (0: heuristic schedules)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--runs", a.runs, "Timed runs (median reported)")->check(CLI::PositiveNumber);
  cmd->add_flag("!--no-check", a.check, "Skip the comparison with the interpreter");
  cmd->callback([] { run_tc_command(a); });
}

}  // namespace lumen::tools
