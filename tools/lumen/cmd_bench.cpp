// `lumen bench`: how fast a model runs — a decoder's prefill and decode
// tokens/s, an encoder's batch latency — median of repeated runs after warm-up.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "lumen/core/error.h"
#include "tools/lumen/commands.h"
#include "tools/lumen/model_files.h"

namespace lumen::tools {

namespace {

template <typename F>
double median_seconds(int runs, F&& f) {
  f();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

void add_bench_command(CLI::App& app) {
  struct Args {
    CommonOptions common;
    int64_t prompt = 128, decode = 64, batch = 8, seq = 128;
    int runs = 5;
  };
  static Args a;
  CLI::App* cmd = app.add_subcommand("bench", "Measure a model: decoder prefill/decode tokens/s, encoder batch latency");
  a.common.add_to(cmd);
  cmd->add_option("--prompt-tokens", a.prompt, "Decoder: prompt length for prefill")->check(CLI::PositiveNumber);
  cmd->add_option("--decode-tokens", a.decode, "Decoder: tokens per decode measurement")->check(CLI::PositiveNumber);
  cmd->add_option("--batch", a.batch, "Encoder: sentences per batch")->check(CLI::PositiveNumber);
  cmd->add_option("--seq", a.seq, "Encoder: tokens per sentence")->check(CLI::PositiveNumber);
  cmd->add_option("--runs", a.runs, "Measured runs (median reported)")->check(CLI::PositiveNumber);
  cmd->callback([] {
    if (model_kind(a.common.model) == ModelKind::Decoder) {
      if (a.common.capacity == 0) a.common.capacity = a.prompt + a.decode + 1;
      Decoder d = open_decoder(a.common);
      auto& r = *d.runner;
      std::vector<int32_t> prompt(static_cast<size_t>(a.prompt));
      for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7 + 1) % r.config().vocab);
      double prefill = median_seconds(a.runs, [&] {
        r.reset();
        r.forward(prompt);
      });
      double decode = median_seconds(a.runs, [&] {
        r.reset();
        r.forward({1});
        for (int64_t i = 0; i < a.decode; ++i) r.forward({static_cast<int32_t>((i * 13 + 5) % r.config().vocab)});
      });
      std::printf("%s\nprefill %lld tokens: %.2f ms (%.1f tokens/s)\ndecode: %.3f ms/token (%.1f tokens/s)\n",
                  r.config().summary().c_str(), static_cast<long long>(a.prompt), prefill * 1e3,
                  static_cast<double>(a.prompt) / prefill, decode * 1e3 / static_cast<double>(a.decode),
                  static_cast<double>(a.decode) / decode);
      return;
    }
    auto e = open_encoder(a.common);
    Array ids(DType::I32, {a.batch, a.seq}), mask(DType::F32, {a.batch, a.seq});
    for (int64_t i = 0; i < a.batch * a.seq; ++i) {
      ids.set(i, static_cast<double>(1000 + (i * 31) % 20000));
      mask.set(i, 1.0);
    }
    double t = median_seconds(a.runs, [&] { e->pooled(ids, mask); });
    std::printf("%s\nbatch %lld x %lld tokens: %.2f ms (%.1f sentences/s)\n", e->config().summary().c_str(),
                static_cast<long long>(a.batch), static_cast<long long>(a.seq), t * 1e3, static_cast<double>(a.batch) / t);
  });
}

}  // namespace lumen::tools
