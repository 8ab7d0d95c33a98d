#include "lumen/egraph/pattern.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

#include "lumen/core/error.h"

namespace lumen::egraph {

namespace {

struct OpName {
  const char* name;
  Op op;
};

constexpr OpName kOps[] = {
    {"add", Op::Add},       {"mul", Op::Mul},         {"mod", Op::Mod},     {"lt", Op::LessThan},
    {"exp2", Op::Exp2},     {"log2", Op::Log2},       {"sin", Op::Sin},     {"sqrt", Op::Sqrt},
    {"recip", Op::Recip},   {"cast", Op::Cast},       {"contiguous", Op::Contiguous},
    {"sum", Op::SumReduce}, {"max", Op::MaxReduce},   {"gather", Op::Gather},
};

size_t arity(Op op) { return is_binary(op) || op == Op::Gather ? 2 : 1; }

class Parser {
 public:
  Parser(const std::string& text, PatternScope& scope, bool may_add) : text_(text), scope_(scope), may_add_(may_add) {}

  PatternNode parse() {
    PatternNode n = term();
    skip_space();
    if (pos_ != text_.size()) error("unexpected text after the pattern");
    return n;
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    fail("pattern '", text_, "': ", what, " at position ", pos_, " (patterns look like (mul ?a (add ?b ?c)))");
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  std::string word() {
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' ||
                                   text_[pos_] == '.' || text_[pos_] == '-' || text_[pos_] == '+')) {
      ++pos_;
    }
    if (start == pos_) error("expected a name or number");
    return text_.substr(start, pos_ - start);
  }
  PatternNode term() {
    skip_space();
    if (pos_ >= text_.size()) error("unexpected end");
    PatternNode n;
    char c = text_[pos_];
    if (c == '?') {
      ++pos_;
      n.kind = PatternNode::Kind::Var;
      std::string name = word();
      n.var = scope_.var(name, may_add_);
      if (n.var < 0) error("variable ?" + name + " is not bound by the left side");
      return n;
    }
    if (c != '(') {
      std::string w = word();
      char* end = nullptr;
      n.kind = PatternNode::Kind::Number;
      n.number = std::strtod(w.c_str(), &end);
      if (end == w.c_str() || *end != '\0') error("'" + w + "' is neither ?variable, number nor (op ...)");
      return n;
    }
    ++pos_;
    skip_space();
    std::string head = word();
    n.kind = PatternNode::Kind::Op;
    auto op = std::find_if(std::begin(kOps), std::end(kOps), [&](const OpName& o) { return head == o.name; });
    if (op == std::end(kOps)) error("unknown op '" + head + "'");
    n.op = op->op;
    if (pos_ < text_.size() && text_[pos_] == ':') {
      ++pos_;
      if (!is_reduce(n.op) && n.op != Op::Gather) error("only reductions and gather take an :axis");
      std::string axis = word();
      n.axis_var = scope_.axis(axis, may_add_);
      if (n.axis_var < 0) error("axis :" + axis + " is not bound by the left side");
    }
    for (;;) {
      skip_space();
      if (pos_ >= text_.size()) error("missing ')'");
      if (text_[pos_] == ')') break;
      n.children.push_back(term());
    }
    ++pos_;
    if (n.children.size() != arity(n.op)) error(std::string(op->name) + " takes " + std::to_string(arity(n.op)) + " operands");
    return n;
  }

  const std::string& text_;
  PatternScope& scope_;
  bool may_add_;
  size_t pos_ = 0;
};

// Pushes `outer` into an elementwise e-node's operand: operand view then outer.
EChild through(EGraph& g, const EChild& operand, ViewId outer) {
  if (g.views().is_identity(outer)) return operand;
  View composed = g.views().get(operand.view).then(g.views().get(outer));
  return {g.find(operand.cls), g.views().intern(composed)};
}

// Whether a view may move inside an e-node with this op.
bool view_passes(const EGraph& g, const ENode& n, ViewId view) {
  if (g.views().is_identity(view)) return true;
  if (n.kind != ENodeKind::Prim || !is_elementwise(n.op)) return false;
  bool zero_at_zero = n.op == Op::Add || n.op == Op::Mul || n.op == Op::Cast;  // padding reads 0 either way
  return zero_at_zero || !g.views().get(view).has_mask();
}

class Matcher {
 public:
  Matcher(EGraph& g, std::vector<Subst>& out, size_t limit) : g_(g), out_(out), limit_(limit) {}

  // Matches `p` against operand `e`, then continues with `rest` (a stack of
  // pending (pattern, operand) pairs), emitting complete substitutions.
  using Pending = std::vector<std::pair<const PatternNode*, EChild>>;

  void run(Pending rest, Subst s, int depth) {
    if (out_.size() >= limit_) return;
    if (rest.empty()) {
      out_.push_back(std::move(s));
      return;
    }
    auto [p, e] = rest.back();
    rest.pop_back();
    e.cls = g_.find(e.cls);
    switch (p->kind) {
      case PatternNode::Kind::Var: {
        auto& slot = s.vars[static_cast<size_t>(p->var)];
        if (!slot) {
          slot = e;
        } else if (g_.find(slot->cls) != e.cls || slot->view != e.view) {
          return;
        }
        run(std::move(rest), std::move(s), depth);
        return;
      }
      case PatternNode::Kind::Number: {
        auto value = g_.uniform_constant(e.cls);
        if (!value || *value != p->number || g_.views().get(e.view).has_mask()) return;
        run(std::move(rest), std::move(s), depth);
        return;
      }
      case PatternNode::Kind::Op:
        break;
    }
    const std::vector<ENode>& nodes = g_.eclass(e.cls).nodes;  // matching only interns views: classes stay put
    for (const ENode& n : nodes) {
      if (n.kind == ENodeKind::View) {
        if (depth < 3) {
          Pending again = rest;
          again.emplace_back(p, through(g_, n.children[0], e.view));
          run(std::move(again), s, depth + 1);
        }
        continue;
      }
      if (n.op != p->op || !view_passes(g_, n, e.view)) continue;
      Subst next = s;
      if (p->axis_var >= 0) {
        int& axis = next.axes[static_cast<size_t>(p->axis_var)];
        if (axis >= 0 && axis != n.axis) continue;
        axis = n.axis;
      }
      Pending more = rest;
      for (size_t i = p->children.size(); i-- > 0;) more.emplace_back(&p->children[i], through(g_, n.children[i], e.view));
      run(std::move(more), std::move(next), depth);
      if (out_.size() >= limit_) return;
    }
  }

 private:
  EGraph& g_;
  std::vector<Subst>& out_;
  size_t limit_;
};

}  // namespace

int PatternScope::var(const std::string& name, bool may_add) {
  auto it = std::find(vars.begin(), vars.end(), name);
  if (it != vars.end()) return static_cast<int>(it - vars.begin());
  if (!may_add) return -1;
  vars.push_back(name);
  return static_cast<int>(vars.size() - 1);
}

int PatternScope::axis(const std::string& name, bool may_add) {
  auto it = std::find(axes.begin(), axes.end(), name);
  if (it != axes.end()) return static_cast<int>(it - axes.begin());
  if (!may_add) return -1;
  axes.push_back(name);
  return static_cast<int>(axes.size() - 1);
}

Pattern parse_pattern(const std::string& text, PatternScope& scope, bool may_add) {
  return Pattern{Parser(text, scope, may_add).parse(), text};
}

void match(EGraph& egraph, const Pattern& pattern, ClassId cls, ViewId identity, const PatternScope& scope,
           std::vector<Subst>& out, size_t limit) {
  Subst s;
  s.vars.resize(scope.vars.size());
  s.axes.assign(scope.axes.size(), -1);
  Matcher(egraph, out, limit).run({{&pattern.root, EChild{cls, identity}}}, std::move(s), 0);
}

EChild broadcast_constant(EGraph& egraph, double value, const Shape& shape, DType dtype) {
  ENode c;
  c.op = Op::Constant;
  c.dtype = dtype;
  c.number = value;
  c.leaf = egraph.views().intern(View::contiguous({}));
  ClassId k = egraph.add(std::move(c));
  if (shape.empty()) return egraph.edge(k, View::contiguous({}));
  return egraph.edge(k, View::contiguous({}).reshape(Shape(shape.size(), Expr(1))).expand(shape));
}

namespace {

EChild build(EGraph& g, const PatternNode& p, const Subst& s, const Shape& shape, DType dtype) {
  switch (p.kind) {
    case PatternNode::Kind::Var: {
      const auto& bound = s.vars[static_cast<size_t>(p.var)];
      if (!bound) fail("pattern: variable slot ", p.var, " is unbound");
      return *bound;
    }
    case PatternNode::Kind::Number:
      return broadcast_constant(g, p.number, shape, dtype);
    case PatternNode::Kind::Op:
      break;
  }
  ENode n;
  n.op = p.op;
  if (p.axis_var >= 0) n.axis = s.axes[static_cast<size_t>(p.axis_var)];
  n.children.resize(p.children.size());
  // Operands that are variables or ops first: a number takes their shape.
  std::optional<EChild> sibling;
  for (size_t i = 0; i < p.children.size(); ++i) {
    if (p.children[i].kind == PatternNode::Kind::Number) continue;
    n.children[i] = build(g, p.children[i], s, shape, dtype);
    if (!sibling) sibling = n.children[i];
  }
  for (size_t i = 0; i < p.children.size(); ++i) {
    if (p.children[i].kind != PatternNode::Kind::Number) continue;
    if (sibling) {
      n.children[i] = broadcast_constant(g, p.children[i].number, g.shape(*sibling), g.dtype(sibling->cls));
    } else {
      n.children[i] = build(g, p.children[i], s, shape, dtype);
    }
  }
  ClassId c = g.add(std::move(n));
  return g.identity_edge(c);
}

}  // namespace

EChild instantiate(EGraph& egraph, const Pattern& pattern, const Subst& subst, const Shape& shape, DType dtype) {
  return build(egraph, pattern.root, subst, shape, dtype);
}

}  // namespace lumen::egraph
