// CandidateRig (lumen/runtime/candidate_rig.h): a compiled candidate that
// computes something else is rejected, against the interpreter for small
// graphs and against the original's compiled program for graphs too large to
// interpret; state writes are checked against the original's.
#include <gtest/gtest.h>

#include "lumen/backend/cpu/cpu_backend.h"
#include "lumen/compiler/compiler.h"
#include "lumen/core/tensor.h"
#include "lumen/runtime/candidate_rig.h"

namespace lumen {
namespace {

backend::CompiledProgram compiled(const Graph& g) {
  std::vector<Edge> outputs;
  for (const NamedOutput& o : g.outputs()) outputs.push_back(o.edge);
  return compiler::compile(g, outputs, {}, cpu::CpuBackend::shared()).program;
}

// y = reduce(x * factor) over the last axis, with x [rows, cols].
std::shared_ptr<Graph> scaled_sum(int64_t rows, int64_t cols, double factor) {
  auto g = std::make_shared<Graph>();
  Tensor x = g->input("x", {Expr(rows), Expr(cols)});
  g->mark_output((x * factor).sum_reduce(1), "y");
  return g;
}

void expect_rejected(CandidateRig& rig, const backend::CompiledProgram& p) {
  try {
    rig.check(p);
    FAIL() << "a wrong program was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("graph search: output 0 element"), std::string::npos) << e.what();
  }
}

TEST(CandidateRig, RejectsAProgramThatDisagreesWithTheInterpreter) {
  auto g = scaled_sum(7, 33, 3.0);
  std::vector<Edge> outputs{g->outputs()[0].edge};
  CandidateRig rig(g, outputs, {}, 64);
  EXPECT_NO_THROW(rig.check(compiled(*g)));
  EXPECT_NO_THROW(rig.check(compiled(*scaled_sum(7, 33, 3.0))));  // an equal program, compiled again
  expect_rejected(rig, compiled(*scaled_sum(7, 33, 2.0)));
}

TEST(CandidateRig, LargeGraphsAreCheckedAgainstTheOriginalProgram) {
  auto g = scaled_sum(1000, 16000, 3.0);  // 3.2e7 element steps: over the interpreter's allowance
  std::vector<Edge> outputs{g->outputs()[0].edge};
  CandidateRig rig(g, outputs, {}, 64);
  EXPECT_NO_THROW(rig.check(compiled(*g)));  // the original: the reference from now on
  expect_rejected(rig, compiled(*scaled_sum(1000, 16000, 2.0)));
}

TEST(CandidateRig, StateWritesMustAgreeWithTheOriginals) {
  auto make = [](double factor) {
    auto g = std::make_shared<Graph>();
    Tensor s = g->state("s", {Expr(4)});
    Tensor x = g->input("x", {Expr(4)});
    g->assign(s, x * factor);
    g->mark_output(x + s, "y");  // reads the state as it was before the run
    return g;
  };
  auto g = make(2.0);
  CandidateRig rig(g, {g->outputs()[0].edge}, {}, 64);
  EXPECT_NO_THROW(rig.check(compiled(*g)));
  try {
    rig.check(compiled(*make(5.0)));
    FAIL() << "a program writing other state was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("state 's'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lumen
