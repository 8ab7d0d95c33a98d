// Errors a person can act on: each names the problem and points (line,
// column, caret) at the offending source.
#include <gtest/gtest.h>

#include "lumen/core/graph.h"
#include "lumen/core/tensor.h"
#include "lumen/tc/comprehension.h"

namespace lumen::tc {
namespace {

// The message define(source)(args) raises, with 2-D f32 inputs of `shapes`
// (an i32 one where the shape's first entry is negative) and `scalars`.
std::string error_of(const std::string& source, const std::vector<std::vector<int64_t>>& shapes = {{3, 4}, {4, 5}},
                     const std::vector<double>& scalars = {}) {
  try {
    Graph g;
    std::vector<Arg> args;
    int i = 0;
    for (std::vector<int64_t> s : shapes) {
      DType dtype = DType::F32;
      if (!s.empty() && s[0] < 0) {
        dtype = DType::I32;
        s[0] = -s[0];
      }
      Shape shape;
      for (int64_t d : s) shape.push_back(Expr(d));
      args.push_back(g.input("in" + std::to_string(i++), shape, dtype));
    }
    for (double x : scalars) args.emplace_back(std::in_place_index<1>, x);
    define(source)(args);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_HAS(text, fragment) EXPECT_NE(std::string(text).find(fragment), std::string::npos) << text

TEST(TcErrors, UnknownTensorWithCaret) {
  std::string e = error_of("def f(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! X(m,k) * B(k,n)\n}");
  EXPECT_EQ(e.substr(0, e.find(" (tensors")), "tc: line 2, column 14: unknown tensor 'X'");
  EXPECT_HAS(e, "\n    C(m,n) +=! X(m,k) * B(k,n)\n               ^");
}

TEST(TcErrors, RankMismatches) {
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k,j) * B(k,n) }"),
             "column 55: rank mismatch: A has 2 dims but is read with 3 indices");
  EXPECT_HAS(error_of("def f(float(M,K,J) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k,0) * B(k,n) }"),
             "rank mismatch: A is declared with 3 dims but the tensor passed has shape [3, 4]");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(m,n) = A(m,n)\n C(m) = A(m,0) }", {{3, 4}, {4, 5}}),
             "line 2, column 2: rank mismatch: C was defined with 2 indices, here with 1");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (float(M) C) { C(m,k) = A(m,k) }"),
             "rank mismatch: output 'C' is declared with 1 dims but defined with 2 indices");
}

TEST(TcErrors, TypeMismatches) {
  EXPECT_HAS(error_of("def f(int(M,K) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k) * B(k,n) }"),
             "column 7: type mismatch: A is declared int but the tensor passed is f32 [3, 4]");
  EXPECT_HAS(error_of("def f(int(M,K) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k) * B(k,n) }", {{-3, 4}, {4, 5}}),
             "column 60: type mismatch in '*': 'A(m,k)' is int, 'B(k,n)' is float; cast one with float(...) or int(...)");
  EXPECT_HAS(error_of("def f(int(M,K) A, float(K,N) B) -> (C) { C(m,k) = A(m,k) * 0.5 }", {{-3, 4}, {4, 5}}),
             "type mismatch: 0.5 is not an integer but is used as int");
  EXPECT_HAS(error_of("def f(int(M,K) A, float(K,N) B) -> (C) { C(m,k) = exp(A(m,k)) }", {{-3, 4}, {4, 5}}),
             "exp needs float arguments, 'A(m,k)' is int");
  EXPECT_HAS(error_of("def f(int(M,K) A, float(K,N) B) -> (C) { C(k,n) = B(k,n)\n C(k,n) += A(k,j) }", {{-3, 4}, {4, 5}}),
             "line 2, column 9: type mismatch: C is f32 but '+=' accumulates i32 into it");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (int(M,K) C) { C(m,k) = A(m,k) }"),
             "type mismatch: output C is declared int but computes f32");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(m,k) = A(m,k) ? 1.0 : 0.0 }"),
             "the condition 'A(m,k)' must be a bool");
}

TEST(TcErrors, RangesThatCannotBeInferred) {
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(i) +=! A(i + j, 0) }"),
             "the range of 'i' is ambiguous: index 'i + j' of A (dim 0, size 3) also depends on 'j'");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(m,z) = A(m,0) }"),
             "column 48: cannot infer the range of 'z': it is not an affine index of any tensor read");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(m) +=! A(m, k + 4) * A(m, k) }"),
             "the range of 'k' is empty: no value of it keeps every read in bounds (reading index 'k' of A (dim 1, size 4))");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(m) +=! A(m, k) where k in 0:5 }"),
             "index 'k' of A (dim 1, size 4) reaches 4 for k in 0:5: out of bounds");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(i) = A(i - 1, 0) }"),
             "output index 'i' ranges over 1:4, but an output's indices start at 0");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(m) = A(m,k) }"),
             "'k' is not on the left-hand side, so it would be reduced over, but '=' does not reduce");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(m) +=! A(m,k) where q in 0:3 }"),
             "where names 'q', which is no index variable of this statement");
}

TEST(TcErrors, WhereNarrowsAndOverrides) {
  // where h < 2 narrows the inferred 0:3; where k in 1:3 replaces 0:4.
  EXPECT_EQ(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(h) +=! A(h,k) where h < 2, k in 1:3 }"), "(no error)");
}

TEST(TcErrors, ArgumentsAndSizes) {
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k) * B(k,n) }", {{3, 4}, {5, 5}}),
             "size mismatch: K is 4 from A (dim 1) but 5 from B (dim 0)");
  EXPECT_HAS(error_of("def f(float(M,K) A) -> (C) { C(m) = A(m,0) }"), "f takes 1 arguments (A), got 2");
  EXPECT_HAS(error_of("def f(float(M,K) A, int s) -> (C) { C(m) = A(m,s) }", {{3, 4}}, {1.5}),
             "int parameter s was given 1.5, which is not an integer");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { A(m,k) = B(k,m) }"), "'A' is an input and cannot be assigned");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(m) += A(m,k) }"),
             "'+=' accumulates into C, which has no value yet; use '+=!'");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C, D) { C(m) +=! A(m,k) }"), "output 'D' is never defined");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(m) +=! exp(A(m,k), 1.0) }"), "exp takes 1 argument, got 2");
}

}  // namespace
}  // namespace lumen::tc

namespace lumen::tc {
namespace {

// Index arithmetic past int64 is an error, never undefined behaviour.
TEST(TcErrors, HugeIndexArithmetic) {
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(m) +=! A(m, k * 3000000000000000 * 3000000000000000) }"),
             "overflows int64");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(m) = A(m, 0) * (9000000000000000 * 9000000000000000 / 2) }"),
             "integer constant out of range");
  EXPECT_HAS(error_of("def f(float(M,K) A, float(K,N) B) -> (C) { C(m) +=! A(m, k) where k in 0:3000000000000000 * 4000 }"),
             "overflows int64");
}

}  // namespace
}  // namespace lumen::tc
