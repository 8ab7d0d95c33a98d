// The comprehension parser: what it builds, and the syntax errors it gives
// (line, column and a caret under the offending token).
#include <gtest/gtest.h>

#include "lumen/core/error.h"
#include "lumen/tc/parser.h"

namespace lumen::tc {
namespace {

std::string error_of(const std::string& source) {
  try {
    parse(source);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TcParser, MatmulDef) {
  std::vector<Def> defs = parse("def matmul(float(M,K) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k) * B(k,n) }");
  ASSERT_EQ(defs.size(), 1u);
  const Def& d = defs[0];
  EXPECT_EQ(d.name, "matmul");
  ASSERT_EQ(d.params.size(), 2u);
  EXPECT_EQ(d.params[1].name, "B");
  EXPECT_EQ(d.params[1].dims[0].name, "K");
  EXPECT_EQ(d.params[1].pos.column, 37);
  ASSERT_EQ(d.statements.size(), 1u);
  const Statement& s = d.statements[0];
  EXPECT_EQ(s.reduction, Reduction::Sum);
  EXPECT_TRUE(s.init);
  EXPECT_EQ(s.rhs->kind, NodeKind::Binary);
  EXPECT_EQ(s.rhs->text, "*");
  EXPECT_EQ(s.rhs->args[0]->kind, NodeKind::Access);
  EXPECT_EQ(s.rhs->span.column, 60);
  EXPECT_EQ(s.rhs->span.length, 15);  // "A(m,k) * B(k,n)"
}

TEST(TcParser, OperatorsPrecedenceWhereAndScalars) {
  std::vector<Def> defs = parse(R"(# a comment
    def f(float(N) A, int s, float alpha) -> (float(N) B, C) {
      B(i) = a < 2 || -A(i) * 2 + 1 >= alpha && !(A(i) == 0) ? exp(A(i)) : max(A(i), 0.5e1)
      C(i) min=! A(i * s + k); C(i) max= A(i) where k in 0:s, i < 3
    })");
  const Def& d = defs[0];
  EXPECT_TRUE(d.params[1].scalar);
  EXPECT_EQ(d.params[1].dtype, DType::I32);
  EXPECT_TRUE(d.outputs[0].typed);
  const Ast& rhs = *d.statements[0].rhs;
  ASSERT_EQ(rhs.kind, NodeKind::Ternary);
  EXPECT_EQ(rhs.args[0]->text, "||");
  EXPECT_EQ(rhs.args[0]->args[1]->text, "&&");
  EXPECT_EQ(rhs.args[0]->args[1]->args[0]->text, ">=");
  EXPECT_EQ(rhs.args[0]->args[1]->args[0]->args[0]->text, "+");
  EXPECT_EQ(rhs.args[2]->kind, NodeKind::Call);
  EXPECT_EQ(rhs.args[2]->args[1]->number, 5.0);
  EXPECT_EQ(d.statements[1].reduction, Reduction::Min);
  EXPECT_TRUE(d.statements[1].init);
  EXPECT_EQ(d.statements[2].reduction, Reduction::Max);
  EXPECT_FALSE(d.statements[2].init);
  ASSERT_EQ(d.statements[2].wheres.size(), 2u);
  EXPECT_EQ(d.statements[2].wheres[1].kind, Where::Kind::Lt);
  EXPECT_EQ(d.statements[2].pos.line, 4);
}

TEST(TcParser, SeveralDefs) {
  EXPECT_EQ(parse("def a(float(N) X) -> (Y) { Y(i) = X(i) } def b(float(N) X) -> (Y) { Y(i) = X(i) }").size(), 2u);
}

TEST(TcParser, SyntaxErrorsPointAtTheToken) {
  EXPECT_EQ(error_of("def f(float(N) A) -> (B) {\n  B(i) = A(i) +\n}"),
            "tc: line 3, column 1: expected a number, a name, a tensor read or '(', found '}'\n  }\n  ^");
  EXPECT_EQ(error_of("def f(float(N) A) -> (B) { B(i) == A(i) }"),
            "tc: line 1, column 33: expected an assignment (=, +=!, *=!, max=!, min=!, +=, *=, max=, min=), found '=='\n"
            "  def f(float(N) A) -> (B) { B(i) == A(i) }\n"
            "                                  ^~");
  EXPECT_NE(error_of("def f(float(N) A) -> (B) { B(i) = A(i) $ }").find("column 40: unexpected character '$'"), std::string::npos);
  EXPECT_NE(error_of("def f(floot(N) A) -> (B) { B(i) = A(i) }").find("unknown element type 'floot'"), std::string::npos);
  EXPECT_NE(error_of("def f(float(N) A) -> (B) { B(i+1) = A(i) }").find("expected ')' to close the left-hand side"), std::string::npos);
  EXPECT_NE(error_of("def f(float(N) A) -> (B) { B(i) = A(i) where i 0:N }").find("expected 'in'"), std::string::npos);
  EXPECT_NE(error_of("def f(float(N) A) -> (B) { B(i) = A(i)").find("expected '}' to close the body of 'f'"), std::string::npos);
  EXPECT_NE(error_of("").find("expected 'def"), std::string::npos);
  EXPECT_NE(error_of("def f(float(2.5) A) -> (B) { B(i) = A(i) }").find("expected a size name or an integer, found '2.5'"),
            std::string::npos);
}

TEST(TcParser, DeepNestingIsAnErrorNotACrash) {
  std::string deep = "def f(float(N) A) -> (B) { B(i) = " + std::string(5000, '(') + "A(i)" + std::string(5000, ')') + " }";
  EXPECT_NE(error_of(deep).find("nested more than"), std::string::npos);
  std::string minus = "def f(float(N) A) -> (B) { B(i) = " + std::string(5000, '-') + "A(i) }";
  EXPECT_NE(error_of(minus).find("nested more than"), std::string::npos);
}

}  // namespace
}  // namespace lumen::tc
