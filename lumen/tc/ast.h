// The syntax tree of a tensor comprehension: `def name(params) -> (outputs)
// { statements }`. Every node keeps the source position it was parsed from,
// so any later stage (range inference, lowering) can point at it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lumen/core/dtype.h"

namespace lumen::tc {

// 1-based line and column of a token's first character; `length` is the
// token's width in characters (the caret's width in a diagnostic).
struct Pos {
  int line = 1;
  int column = 1;
  int length = 1;
};

// From a's start to b's end when on one line; else a.
inline Pos join(const Pos& a, const Pos& b) {
  if (a.line != b.line || b.column + b.length < a.column) return a;
  return Pos{a.line, a.column, b.column + b.length - a.column};
}

enum class NodeKind : uint8_t {
  Number,   // 3, 0.5, 1e-5
  Name,     // an index variable, a size, or a scalar parameter
  Access,   // A(i, k + 1): a tensor read; args are the index expressions
  Unary,    // text is "-" or "!"
  Binary,   // text is the operator: + - * / % < <= > >= == != && ||
  Call,     // text is the function: exp, max, select, float, ...
  Ternary,  // args: condition, then, else
};

struct Ast;
using AstPtr = std::shared_ptr<const Ast>;

struct Ast {
  NodeKind kind = NodeKind::Number;
  Pos pos;   // the node's own token: a name, an operator
  Pos span;  // the whole expression (its first token, as wide as it is when on one line)
  std::string text;
  double number = 0;
  bool integer = false;  // Number: written without '.' or exponent
  std::vector<AstPtr> args;
};

// One size in a tensor's type: a name bound from the argument's shape (M)
// or a number it must equal (3).
struct DimDecl {
  std::string name;  // empty when a number
  int64_t value = 0;
  Pos pos;
};

struct Param {
  DType dtype = DType::F32;
  std::string type_name;  // as written: "float", "int", ...
  std::string name;
  Pos pos;                // of the name
  Pos type_pos;
  bool scalar = false;    // `float alpha`: no dims, passed as a number
  std::vector<DimDecl> dims;
};

struct OutputDecl {
  std::string name;
  Pos pos;
  bool typed = false;  // `float(M,N) C` rather than `C`
  DType dtype = DType::F32;
  std::string type_name;
  Pos type_pos;
  std::vector<DimDecl> dims;
};

enum class Reduction : uint8_t { None, Sum, Product, Max, Min };

// `where v in lo:hi`, `where v < e`, `v <= e`, `v > e`, `v >= e`.
struct Where {
  enum class Kind : uint8_t { In, Lt, Le, Gt, Ge };
  std::string var;
  Pos pos;
  Kind kind = Kind::In;
  AstPtr lo, hi;  // In: both; Lt/Le: hi; Gt/Ge: lo
};

struct IndexVar {
  std::string name;
  Pos pos;
};

// `C(m, n) +=! rhs where ...`. `reduction` None is plain `=`; `init` marks
// the `!` forms, which start from the reduction's identity rather than from
// C's previous value.
struct Statement {
  std::string tensor;
  Pos pos;
  std::vector<IndexVar> indices;
  Reduction reduction = Reduction::None;
  bool init = false;
  Pos op_pos;
  std::string op_text;  // "+=!", "max=", "=", ...
  AstPtr rhs;
  std::vector<Where> wheres;
};

struct Def {
  std::string name;
  Pos pos;
  std::vector<Param> params;
  std::vector<OutputDecl> outputs;
  std::vector<Statement> statements;
};

}  // namespace lumen::tc
