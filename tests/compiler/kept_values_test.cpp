// Tests for values derived from parameters alone (lower_stage's keep_parameter_relayouts,
// buffer_lives' worth_keeping): a chain of kernels that read only parameters and values already
// kept is kept whole, outside the arena, and made again when a parameter is set again.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include "lumen/backend/cpu/cpu_backend.h"
#include "lumen/backend/interp/interpreter.h"
#include "lumen/compiler/compiler.h"
#include "lumen/runtime/compiled_executor.h"
#include "lumen/runtime/program.h"

namespace lumen {
namespace {

Array wave(int64_t rows, int64_t cols, float freq) {
  std::vector<float> v;
  for (int64_t i = 0; i < rows * cols; ++i) v.push_back(std::sin(freq * static_cast<float>(i)) + 0.1f);
  return Array::from_floats(v, {rows, cols});
}

double max_difference(const Array& a, const Array& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::fabs(a.get(i) - b.get(i)));
  return worst;
}

// y = x @ (w / |w|), the columns' norms taken over w's rows and the normalised weight kept in a
// buffer: its kernel reads the parameter w and the norms, a value made from w alone.
TEST(KeptValues, AWeightNormalisedByItsKeptNormIsKeptAndMadeAgainWhenSet) {
  Graph g;
  Tensor x = g.input("x", {Expr(5), Expr(64)});
  Tensor w = g.parameter("w", {Expr(64), Expr(48)});
  Tensor norm = w.mul(w).sum_reduce(0).sqrt();  // [48]
  Tensor normalised = w.mul(norm.recip().reshape({Expr(1), Expr(48)}).expand({Expr(64), Expr(48)})).buffered();
  Tensor y = x.matmul(normalised);
  compiler::CompilerOptions o;
  o.search.use_cache = false;
  compiler::CompileResult compiled = compiler::compile(g, {y.edge()}, o, cpu::CpuBackend::shared());

  // The norms and the normalised weight are both kept, and made from w alone.
  int kept_from_w = 0;
  for (const backend::Scratch& sb : compiled.program.scratch) {
    if (sb.kept_inputs == std::vector<std::string>{"w"}) ++kept_from_w;
  }
  EXPECT_GE(kept_from_w, 2);
  // What runs every time reads no parameter: only x and kept buffers.
  for (const backend::Launch& l : compiled.program.launches) {
    if (l.computes == backend::kPackLaunch) continue;
    for (size_t b = 1; b < l.buffers.size(); ++b) {
      if (l.buffers[b] < 0) continue;
      const Node& read = g.node(l.buffers[b]);
      EXPECT_FALSE(read.op == Op::Input && read.parameter) << "a per-run kernel reads " << read.name;
    }
  }

  Program p(std::make_shared<const Graph>(g), {{"y", y.edge()}},
            std::make_unique<CompiledExecutor>(std::move(compiled.program)));
  std::map<std::string, Array> inputs = {{"x", wave(5, 64, 0.37f)}, {"w", wave(64, 48, 0.11f)}};
  for (const auto& [name, a] : inputs) p.set(name, a);
  p.run();
  Array want = interp::Interpreter(g).run(inputs, {y.edge()}).at(0);
  EXPECT_LT(max_difference(want, p.get("y")), 1e-5);
  p.run();  // the kept values are read again, not made again
  EXPECT_LT(max_difference(want, p.get("y")), 1e-5);

  // New weights: the whole chain is made again.
  inputs["w"] = wave(64, 48, 0.29f);
  p.set("w", inputs["w"]);
  p.run();
  Array want2 = interp::Interpreter(g).run(inputs, {y.edge()}).at(0);
  EXPECT_GT(max_difference(want, want2), 1e-2);
  EXPECT_LT(max_difference(want2, p.get("y")), 1e-5);
}

// Whether x @ made(parameter p), with made's kernel reading only p, keeps made's value.
bool keeps(const Shape& shape, DType dtype, const std::function<Tensor(const Tensor&)>& made) {
  Graph g;
  Tensor x = g.input("x", {Expr(5), Expr(64)});
  Tensor y = x.matmul(made(g.parameter("p", shape, dtype)).buffered());
  compiler::CompilerOptions o;
  o.search.use_cache = false;
  compiler::CompileResult compiled = compiler::compile(g, {y.edge()}, o, cpu::CpuBackend::shared());
  for (const backend::Scratch& sb : compiled.program.scratch) {
    if (sb.kept_inputs == std::vector<std::string>{"p"}) return true;
  }
  return false;
}

// A transform may make up to kKeptGrowth (4) times the bytes it reads (Winograd's filters make
// 16/9), in no wider a dtype: a dequantization's wider copy is not kept.
TEST(KeptValues, AtMostFourTimesTheBytesInNoWiderADtype) {
  Shape wide{Expr(64), Expr(48)};
  auto repeated = [&](int64_t times) {
    return [&wide, times](const Tensor& p) {
      return p.unsqueeze(0).expand({Expr(times), Expr(64 / times), Expr(48)}).reshape(wide);
    };
  };
  EXPECT_TRUE(keeps({Expr(16), Expr(48)}, DType::F32, repeated(4)));
  EXPECT_FALSE(keeps({Expr(8), Expr(48)}, DType::F32, repeated(8)));
  EXPECT_FALSE(keeps(wide, DType::U8, [](const Tensor& p) { return p.cast(DType::F32); }));
  EXPECT_TRUE(keeps(wide, DType::F32, [](const Tensor& p) { return p.mul(p.scalar(2)); }));
}

}  // namespace
}  // namespace lumen
