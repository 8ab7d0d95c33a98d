// Tests for the CPU codegen's early exit: a serial loop that only ORs into
// any-reductions stops once they hold true (a safe softmax's "is the whole
// row -inf" check over unmasked scores reads one vector instead of the row),
// and gives the interpreter's answers wherever the first true element lies;
// an all() (not any of the negation) stops at the first false; a sum keeps
// looping.
#include <gtest/gtest.h>

#include "lumen/backend/cpu/cpu_backend.h"
#include "lumen/compile.h"
#include "lumen/compiler/compiler.h"
#include "lumen/ops/reduce.h"

namespace lumen {
namespace {

constexpr int64_t kRows = 6, kCols = 100;

std::string source_of(const Graph& g, const Tensor& y) {
  compiler::CompilerOptions o;
  o.search.use_cache = false;
  compiler::CompileResult r = compiler::compile(g, {y.edge()}, o, cpu::CpuBackend::shared());
  std::string all;
  for (const std::string& s : cpu::CpuBackend::shared()->render(r.program.kernels, 1)) all += s;
  return all;
}

// Row r is true first at column firsts[r] (-1: nowhere).
Array rows(const std::vector<int64_t>& firsts) {
  Array a(DType::F32, {kRows, kCols});
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) {
      bool on = firsts[static_cast<size_t>(r)] >= 0 && c >= firsts[static_cast<size_t>(r)] && (c - firsts[static_cast<size_t>(r)]) % 3 == 0;
      a.set(r * kCols + c, on ? 1.0 : -0.25 * static_cast<double>(c % 5));
    }
  }
  return a;
}

void expect_like_the_interpreter(Graph& g, const Tensor& y) {
  g.mark_output(y, "y");
  Program cpu = compile(g, {}, {Backend::Cpu}), ref = compile(g, {}, {Backend::Interp});
  for (const std::vector<int64_t>& firsts : std::vector<std::vector<int64_t>>{
           {0, 37, 99, -1, 16, 15}, {-1, -1, -1, -1, -1, -1}, {98, 64, 63, 1, 0, 47}}) {
    for (Program* p : {&cpu, &ref}) {
      p->set("x", rows(firsts));
      p->run();
    }
    Array got = cpu.get("y"), want = ref.get("y");
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(got.get(i), want.get(i)) << "row " << i;
  }
}

TEST(CpuEarlyExit, AnyStopsOnceTrueAndAgreesWhereverTheFirstTrueLies) {
  Graph g;
  Tensor x = g.input("x", {Expr(kRows), Expr(kCols)});
  Tensor y = ops::any(x.scalar(0.5f).expand(x.shape()).less_than(x), {1});
  EXPECT_NE(source_of(g, y).find("break;  // any: true for good"), std::string::npos);
  expect_like_the_interpreter(g, y);
}

TEST(CpuEarlyExit, AllStopsAtTheFirstFalseAndSumsKeepLooping) {
  Graph g;
  Tensor x = g.input("x", {Expr(kRows), Expr(kCols)});
  Tensor all = ops::all(x.scalar(0.5f).expand(x.shape()).less_than(x), {1});
  EXPECT_NE(source_of(g, all).find("break;  // any: true for good"), std::string::npos);
  expect_like_the_interpreter(g, all);
  Graph h;
  Tensor z = h.input("x", {Expr(kRows), Expr(kCols)});
  Tensor sum = ops::sum(z, {1});
  EXPECT_EQ(source_of(h, sum).find("break;"), std::string::npos);
  expect_like_the_interpreter(h, sum);
}

}  // namespace
}  // namespace lumen
