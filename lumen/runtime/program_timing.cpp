#include "lumen/runtime/program_timing.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "lumen/core/error.h"
#include "lumen/runtime/compiled_executor.h"

namespace lumen {

namespace {

using Clock = std::chrono::steady_clock;

std::map<std::string, Array> make_inputs(const Graph& graph, const Bindings& dims) {
  std::map<std::string, Array> inputs;
  std::mt19937 rng(17);
  std::normal_distribution<double> normal(0.0, 0.5);
  for (NodeId id : graph.input_ids()) {
    const Node& node = graph.node(id);
    std::vector<int64_t> shape;
    for (const Expr& d : node.shape) shape.push_back(evaluate(d, dims));
    Array a(node.dtype, shape);
    if (is_float(node.dtype)) {
      for (int64_t i = 0; i < a.numel(); ++i) a.set(i, normal(rng));
    }
    inputs.emplace(node.name, std::move(a));
  }
  return inputs;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

ProgramTimes time_programs(const std::vector<const backend::CompiledProgram*>& programs, const Bindings& dims,
                           double max_seconds) {
  ProgramTimes out;
  if (programs.empty()) return out;
  auto start = Clock::now();
  std::vector<std::unique_ptr<CompiledExecutor>> executors;
  for (const backend::CompiledProgram* p : programs) {
    if (!p || !p->graph) fail("time_programs: a program has no graph");
    executors.push_back(std::make_unique<CompiledExecutor>(*p));
  }
  std::map<std::string, Array> inputs = make_inputs(*programs[0]->graph, dims);
  for (int i = 0; i < 2; ++i) {  // the second warm-up only while it is cheap next to the time allowed
    if (i == 1 && std::chrono::duration<double>(Clock::now() - start).count() > 0.5 * max_seconds) break;
    for (auto& e : executors) e->execute(inputs, dims);
  }
  std::vector<std::vector<double>> times(executors.size());
  constexpr int kMinRounds = 3, kMaxRounds = 25;
  for (int round = 0; round < kMaxRounds; ++round) {
    double spent = std::chrono::duration<double>(Clock::now() - start).count();
    if (round >= kMinRounds && spent >= max_seconds) break;
    for (size_t k = 0; k < executors.size(); ++k) {
      size_t i = (k + static_cast<size_t>(round)) % executors.size();
      auto t0 = Clock::now();
      executors[i]->execute(inputs, dims);
      times[i].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    out.rounds = round + 1;
  }
  for (const auto& t : times) out.median_ms.push_back(median(t));
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace lumen
