#include "lumen/tc/parser.h"

#include "lumen/tc/diagnostic.h"
#include "lumen/tc/functions.h"
#include "lumen/tc/lexer.h"

namespace lumen::tc {

bool type_from_name(const std::string& name, DType* dtype) {
  if (name == "float" || name == "float32") *dtype = DType::F32;
  else if (name == "half" || name == "float16") *dtype = DType::F16;
  else if (name == "bfloat16") *dtype = DType::BF16;
  else if (name == "int" || name == "int32") *dtype = DType::I32;
  else if (name == "bool") *dtype = DType::Bool;
  else return false;
  return true;
}

namespace {

constexpr int kMaxDepth = 200;  // nesting of parentheses and operators

class Parser {
 public:
  Parser(std::string_view source, std::vector<Token> tokens) : src_(source), toks_(std::move(tokens)) {}

  std::vector<Def> program() {
    std::vector<Def> defs;
    while (peek().kind != TokenKind::End) defs.push_back(def());
    if (defs.empty()) fail_at(src_, peek().pos, "expected 'def name(...) -> (...) { ... }', found the end of the text");
    return defs;
  }

 private:
  const Token& peek(size_t ahead = 0) const { return toks_[std::min(at_ + ahead, toks_.size() - 1)]; }
  Token take() {
    Token t = peek();
    if (at_ < toks_.size() - 1) ++at_;
    return t;
  }
  bool is(const char* text) const { return peek().kind != TokenKind::End && peek().kind != TokenKind::Number && peek().text == text; }
  bool accept(const char* text) {
    if (!is(text)) return false;
    take();
    return true;
  }
  static std::string found(const Token& t) {
    if (t.kind == TokenKind::End) return "the end of the text";
    return "'" + t.text + "'";
  }
  [[noreturn]] void expected(const std::string& what) const { fail_at(src_, peek().pos, "expected ", what, ", found ", found(peek())); }
  Token expect(const char* text, const char* context) {
    if (!is(text)) expected(std::string("'") + text + "' " + context);
    return take();
  }
  Token ident(const char* what) {
    if (peek().kind != TokenKind::Ident) expected(what);
    return take();
  }

  Def def() {
    Token kw = peek();
    if (kw.kind != TokenKind::Ident || kw.text != "def") expected("'def'");
    take();
    Def d;
    Token name = ident("the comprehension's name after 'def'");
    d.name = name.text;
    d.pos = name.pos;
    expect("(", "to open the parameter list");
    if (!is(")")) {
      do d.params.push_back(param()); while (accept(","));
    }
    expect(")", "to close the parameter list");
    expect("->", "before the outputs");
    expect("(", "to open the output list");
    do d.outputs.push_back(output()); while (accept(","));
    expect(")", "to close the output list");
    expect("{", "to open the body");
    while (!is("}")) {
      if (peek().kind == TokenKind::End) expected("'}' to close the body of '" + d.name + "'");
      d.statements.push_back(statement());
    }
    take();
    if (d.statements.empty()) fail_at(src_, d.pos, "'", d.name, "' has no statements");
    return d;
  }

  DType type(const Token& t) const {
    DType dtype;
    if (!type_from_name(t.text, &dtype)) {
      fail_at(src_, t.pos, "unknown element type '", t.text, "' (use float, half, bfloat16, int or bool)");
    }
    return dtype;
  }

  std::vector<DimDecl> dims() {
    std::vector<DimDecl> out;
    expect("(", "to open the sizes");
    if (!is(")")) {
      do {
        Token t = take();
        DimDecl dim;
        dim.pos = t.pos;
        if (t.kind == TokenKind::Ident) dim.name = t.text;
        else if (t.kind == TokenKind::Number && t.integer) dim.value = static_cast<int64_t>(t.number);
        else fail_at(src_, t.pos, "expected a size name or an integer, found ", found(t));
        out.push_back(dim);
      } while (accept(","));
    }
    expect(")", "to close the sizes");
    return out;
  }

  Param param() {
    Token t = ident("a parameter type (float, int, ...)");
    Param p;
    p.dtype = type(t);
    p.type_name = t.text;
    p.type_pos = t.pos;
    if (is("(")) p.dims = dims();
    else p.scalar = true;
    Token name = ident("the parameter's name");
    p.name = name.text;
    p.pos = name.pos;
    return p;
  }

  OutputDecl output() {
    OutputDecl o;
    Token first = ident("an output name");
    if (is("(")) {
      o.typed = true;
      o.dtype = type(first);
      o.type_name = first.text;
      o.type_pos = first.pos;
      o.dims = dims();
      first = ident("the output's name");
    }
    o.name = first.text;
    o.pos = first.pos;
    return o;
  }

  Statement statement() {
    Statement s;
    Token name = ident("a statement 'Tensor(indices) op expression'");
    s.tensor = name.text;
    s.pos = name.pos;
    expect("(", "after the tensor being defined");
    if (!is(")")) {
      do {
        Token v = ident("an index variable (left-hand sides take plain index names)");
        s.indices.push_back({v.text, v.pos});
      } while (accept(","));
    }
    expect(")", "to close the left-hand side's indices");
    if (peek().kind != TokenKind::Assign) expected("an assignment (=, +=!, *=!, max=!, min=!, +=, *=, max=, min=)");
    Token op = take();
    s.op_text = op.text;
    s.op_pos = op.pos;
    s.init = op.text.back() == '!';
    std::string base = s.init ? op.text.substr(0, op.text.size() - 1) : op.text;
    s.reduction = base == "+=" ? Reduction::Sum : base == "*=" ? Reduction::Product
                : base == "max=" ? Reduction::Max : base == "min=" ? Reduction::Min : Reduction::None;
    s.rhs = expression();
    if (peek().kind == TokenKind::Ident && peek().text == "where") {
      take();
      do s.wheres.push_back(where()); while (accept(","));
    }
    accept(";");
    return s;
  }

  Where where() {
    Token v = ident("an index variable after 'where'");
    Where w;
    w.var = v.text;
    w.pos = v.pos;
    if (peek().kind == TokenKind::Ident && peek().text == "in") {
      take();
      w.kind = Where::Kind::In;
      w.lo = additive();
      expect(":", "between the range's bounds (where k in 0:K)");
      w.hi = additive();
      return w;
    }
    if (accept("<")) w.kind = Where::Kind::Lt;
    else if (accept("<=")) w.kind = Where::Kind::Le;
    else if (accept(">")) w.kind = Where::Kind::Gt;
    else if (accept(">=")) w.kind = Where::Kind::Ge;
    else expected("'in', '<', '<=', '>' or '>=' after the where variable");
    (w.kind == Where::Kind::Lt || w.kind == Where::Kind::Le ? w.hi : w.lo) = additive();
    return w;
  }

  static AstPtr node(NodeKind kind, const Pos& pos, std::string text, std::vector<AstPtr> args) {
    auto n = std::make_shared<Ast>();
    n->kind = kind;
    n->pos = pos;
    n->text = std::move(text);
    n->args = std::move(args);
    n->span = pos;
    if (kind == NodeKind::Binary || kind == NodeKind::Ternary) n->span = join(n->args.front()->span, n->args.back()->span);
    if (kind == NodeKind::Unary) n->span = join(pos, n->args.back()->span);
    return n;
  }

  struct Depth {
    Parser* p;
    explicit Depth(Parser* parser) : p(parser) {
      if (++p->depth_ > kMaxDepth) fail_at(p->src_, p->peek().pos, "expression nested more than ", kMaxDepth, " deep");
    }
    ~Depth() { --p->depth_; }
  };

  AstPtr expression() {
    Depth guard(this);
    AstPtr cond = binary(0);
    if (!is("?")) return cond;
    Token q = take();
    AstPtr then = expression();
    expect(":", "between the branches of '?:'");
    AstPtr otherwise = expression();
    return node(NodeKind::Ternary, q.pos, "?", {cond, then, otherwise});
  }

  // Precedence levels from loosest: || && (== !=) (< <= > >=) (+ -) (* / %).
  AstPtr binary(int level) {
    static const std::vector<std::vector<std::string>> kLevels = {
        {"||"}, {"&&"}, {"==", "!="}, {"<", "<=", ">", ">="}, {"+", "-"}, {"*", "/", "%"}};
    if (level == static_cast<int>(kLevels.size())) return unary();
    Depth guard(this);
    AstPtr left = binary(level + 1);
    for (;;) {
      const Token& t = peek();
      bool match = false;
      if (t.kind == TokenKind::Punct) {
        for (const std::string& op : kLevels[static_cast<size_t>(level)]) match = match || t.text == op;
      }
      if (!match) return left;
      Token op = take();
      AstPtr right = binary(level + 1);
      left = node(NodeKind::Binary, op.pos, op.text, {left, right});
    }
  }

  AstPtr additive() { return binary(4); }

  AstPtr unary() {
    Depth guard(this);
    if (is("-") || is("!")) {
      Token op = take();
      return node(NodeKind::Unary, op.pos, op.text, {unary()});
    }
    return primary();
  }

  AstPtr primary() {
    Token t = peek();
    if (t.kind == TokenKind::Number) {
      take();
      auto n = std::make_shared<Ast>();
      n->kind = NodeKind::Number;
      n->pos = t.pos;
      n->text = t.text;
      n->number = t.number;
      n->integer = t.integer;
      n->span = t.pos;
      return n;
    }
    if (is("(")) {
      Token open = take();
      AstPtr inner = expression();
      Token close = expect(")", "to close the parenthesis");
      auto copy = std::make_shared<Ast>(*inner);
      copy->span = join(open.pos, close.pos);
      return copy;
    }
    if (t.kind != TokenKind::Ident) expected("a number, a name, a tensor read or '('");
    take();
    if (!is("(")) return node(NodeKind::Name, t.pos, t.text, {});
    take();
    std::vector<AstPtr> args;
    if (!is(")")) {
      do args.push_back(expression()); while (accept(","));
    }
    Token close = expect(")", is_function(t.text) ? "to close the call" : "to close the tensor's indices");
    AstPtr n = node(is_function(t.text) ? NodeKind::Call : NodeKind::Access, t.pos, t.text, std::move(args));
    std::const_pointer_cast<Ast>(n)->span = join(t.pos, close.pos);
    return n;
  }

  std::string_view src_;
  std::vector<Token> toks_;
  size_t at_ = 0;
  int depth_ = 0;
};

}  // namespace

std::vector<Def> parse(std::string_view source) { return Parser(source, tokenize(source)).program(); }

}  // namespace lumen::tc
