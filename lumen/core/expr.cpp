#include "lumen/core/expr.h"

#include <algorithm>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "lumen/core/error.h"
#include "lumen/core/int_math.h"

namespace lumen {

namespace {

// ---- interning ------------------------------------------------------------

struct NodePtrHash {
  size_t operator()(const ExprNode* n) const { return n->hash; }
};

struct NodePtrEqual {
  bool operator()(const ExprNode* x, const ExprNode* y) const {
    return x->kind == y->kind && x->value == y->value && x->name == y->name && x->a == y->a &&
           x->b == y->b && x->c == y->c && (x->kind != ExprKind::Var || (x->lo == y->lo && x->hi == y->hi));
  }
};

size_t combine(size_t seed, size_t v) { return seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)); }

size_t node_hash(const ExprNode& n) {
  size_t h = std::hash<int>()(static_cast<int>(n.kind));
  h = combine(h, std::hash<int64_t>()(n.value));
  if (n.kind == ExprKind::Var) {
    h = combine(h, std::hash<std::string>()(n.name));
    h = combine(h, std::hash<int64_t>()(n.lo));
    h = combine(h, std::hash<int64_t>()(n.hi));
  }
  h = combine(h, std::hash<const void*>()(n.a.get()));
  h = combine(h, std::hash<const void*>()(n.b.get()));
  h = combine(h, std::hash<const void*>()(n.c.get()));
  return h;
}

class InternTable {
 public:
  const ExprNode* intern(ExprNode candidate) {
    candidate.hash = node_hash(candidate);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = nodes_.find(&candidate);
    if (it != nodes_.end()) return *it;
    candidate.id = next_id_++;
    auto* stored = new ExprNode(std::move(candidate));  // lives for the process
    nodes_.insert(stored);
    return stored;
  }

 private:
  std::mutex mutex_;
  std::unordered_set<const ExprNode*, NodePtrHash, NodePtrEqual> nodes_;
  uint64_t next_id_ = 0;
};

InternTable& table() {
  static InternTable* t = new InternTable();  // never destroyed: nodes outlive statics
  return *t;
}

// ---- bounds -----------------------------------------------------------------

struct Interval {
  int64_t lo, hi;
};

Interval point(int64_t v) { return {v, v}; }

Interval mul_bounds(Interval x, Interval y) {
  int64_t c[4] = {bound_mul(x.lo, y.lo), bound_mul(x.lo, y.hi), bound_mul(x.hi, y.lo), bound_mul(x.hi, y.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

Interval div_bounds(Interval x, Interval y) {
  if (y.lo > 0 || y.hi < 0) {  // divisor of one sign: floor division is monotone in each argument
    int64_t c[4] = {bound_floordiv(x.lo, y.lo), bound_floordiv(x.lo, y.hi), bound_floordiv(x.hi, y.lo),
                    bound_floordiv(x.hi, y.hi)};
    return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
  }
  int64_t m = std::max(bound_abs(x.lo), bound_abs(x.hi));
  return {bound_neg(m), m};
}

Interval mod_bounds(Interval x, Interval y) {
  if (y.lo == y.hi && y.lo > 0 && x.lo > -kBoundInf && x.hi < kBoundInf &&
      floordiv(x.lo, y.lo) == floordiv(x.hi, y.lo)) {
    return {floormod(x.lo, y.lo), floormod(x.hi, y.lo)};
  }
  if (y.lo > 0) {
    int64_t hi = y.hi >= kBoundInf ? kBoundInf : y.hi - 1;
    if (x.lo >= 0) hi = std::min(hi, x.hi);
    return {0, hi};
  }
  if (y.hi < 0) {
    int64_t lo = y.lo <= -kBoundInf ? -kBoundInf : y.lo + 1;
    if (x.hi <= 0) lo = std::max(lo, x.lo);
    return {lo, 0};
  }
  int64_t m = std::max(bound_abs(y.lo), bound_abs(y.hi));
  return {bound_neg(m), m};
}

Interval truth(bool always_true, bool always_false) {
  if (always_true) return point(1);
  if (always_false) return point(0);
  return {0, 1};
}

bool excludes_zero(Interval x) { return x.lo > 0 || x.hi < 0; }
bool is_zero(Interval x) { return x.lo == 0 && x.hi == 0; }

Interval bounds_of(const ExprNode& n) {
  auto A = [&] { return Interval{n.a.lo(), n.a.hi()}; };
  auto B = [&] { return Interval{n.b.lo(), n.b.hi()}; };
  switch (n.kind) {
    case ExprKind::Const: return point(n.value);
    case ExprKind::Var: {
      Interval v{n.lo, n.hi};
      if (n.a.defined()) v.hi = std::min(v.hi, bound_add(n.a.hi(), -1));
      return v;
    }
    case ExprKind::Add: return {bound_add(A().lo, B().lo), bound_add(A().hi, B().hi)};
    case ExprKind::Mul: return mul_bounds(A(), B());
    case ExprKind::Div: return div_bounds(A(), B());
    case ExprKind::Mod: return mod_bounds(A(), B());
    case ExprKind::Min: return {std::min(A().lo, B().lo), std::min(A().hi, B().hi)};
    case ExprKind::Max: return {std::max(A().lo, B().lo), std::max(A().hi, B().hi)};
    case ExprKind::Lt: return truth(A().hi < B().lo, A().lo >= B().hi);
    case ExprKind::Eq:
      return truth(A().lo == A().hi && B().lo == B().hi && A().lo == B().lo, A().hi < B().lo || B().hi < A().lo);
    case ExprKind::And: return truth(excludes_zero(A()) && excludes_zero(B()), is_zero(A()) || is_zero(B()));
    case ExprKind::Or: return truth(excludes_zero(A()) || excludes_zero(B()), is_zero(A()) && is_zero(B()));
    case ExprKind::Not: return truth(is_zero(A()), excludes_zero(A()));
    case ExprKind::Select: {
      Interval cond{n.a.lo(), n.a.hi()};
      Interval x{n.b.lo(), n.b.hi()}, y{n.c.lo(), n.c.hi()};
      if (excludes_zero(cond)) return x;
      if (is_zero(cond)) return y;
      return {std::min(x.lo, y.lo), std::max(x.hi, y.hi)};
    }
  }
  return {-kBoundInf, kBoundInf};
}

Expr build(ExprKind kind, Expr a, Expr b = Expr(), Expr c = Expr()) {
  ExprNode n;
  n.kind = kind;
  n.a = a;
  n.b = b;
  n.c = c;
  Interval iv = bounds_of(n);
  n.lo = iv.lo;
  n.hi = iv.hi;
  return Expr(table().intern(std::move(n)));
}

void require(const Expr& e, const char* what) {
  if (!e.defined()) fail("expression: operand of ", what, " is undefined (internal error)");
}

bool both_const(const Expr& a, const Expr& b) { return a.is_const() && b.is_const(); }

bool is_boolean(const Expr& e) { return e.lo() >= 0 && e.hi() <= 1; }

}  // namespace

// ---- Expr -------------------------------------------------------------------

Expr::Expr(int64_t value) {
  ExprNode n;
  n.kind = ExprKind::Const;
  n.value = value;
  n.lo = n.hi = value;
  node_ = table().intern(std::move(n));
}

Expr Expr::var(const std::string& name, int64_t lo, int64_t hi) { return var(name, lo, hi, Expr()); }

Expr Expr::var(const std::string& name, int64_t lo, int64_t hi, Expr extent) {
  if (name.empty()) fail("expression: a variable needs a name");
  if (lo > hi) fail("expression: variable '", name, "' has empty bounds [", lo, ", ", hi, "]");
  ExprNode n;
  n.kind = ExprKind::Var;
  n.name = name;
  n.lo = lo;
  n.hi = hi;
  n.a = extent.defined() && !extent.is_const() ? extent : Expr();
  if (extent.is_const()) n.hi = std::min(n.hi, extent.value() - 1);
  if (n.lo > n.hi) fail("expression: variable '", name, "' ranges over an empty extent");
  if (n.a.defined()) n.hi = std::min(n.hi, bound_add(n.a.hi(), -1));
  return Expr(table().intern(std::move(n)));
}

Expr Expr::symbol(const std::string& name) { return var(name, 0, kMaxDim); }

Expr Expr::index(const std::string& name, Expr extent) {
  require(extent, "index extent");
  int64_t hi = extent.hi() >= kBoundInf ? kBoundInf : std::max<int64_t>(extent.hi() - 1, 0);
  return var(name, 0, hi, extent.is_const() ? Expr() : extent);
}

ExprKind Expr::kind() const { return node_->kind; }
bool Expr::is_const() const { return node_ && node_->kind == ExprKind::Const; }
bool Expr::is_const(int64_t v) const { return is_const() && node_->value == v; }
int64_t Expr::value() const { return node_->value; }
const std::string& Expr::name() const { return node_->name; }
int64_t Expr::lo() const { return node_->lo; }
int64_t Expr::hi() const { return node_->hi; }
Expr Expr::a() const { return node_->a; }
Expr Expr::b() const { return node_->b; }
Expr Expr::c() const { return node_->c; }

const char* expr_kind_name(ExprKind kind) {
  switch (kind) {
    case ExprKind::Const: return "const";
    case ExprKind::Var: return "var";
    case ExprKind::Add: return "add";
    case ExprKind::Mul: return "mul";
    case ExprKind::Div: return "div";
    case ExprKind::Mod: return "mod";
    case ExprKind::Min: return "min";
    case ExprKind::Max: return "max";
    case ExprKind::Lt: return "lt";
    case ExprKind::Eq: return "eq";
    case ExprKind::And: return "and";
    case ExprKind::Or: return "or";
    case ExprKind::Not: return "not";
    case ExprKind::Select: return "select";
  }
  return "?";
}

// ---- factories ----------------------------------------------------------------

Expr make_add(Expr a, Expr b) {
  require(a, "+");
  require(b, "+");
  if (both_const(a, b)) return Expr(checked_add(a.value(), b.value()));
  if (a.is_const()) std::swap(a, b);  // constants on the right
  if (b.is_const(0)) return a;
  return build(ExprKind::Add, a, b);
}

Expr make_mul(Expr a, Expr b) {
  require(a, "*");
  require(b, "*");
  if (both_const(a, b)) return Expr(checked_mul(a.value(), b.value()));
  if (a.is_const()) std::swap(a, b);
  if (b.is_const(0)) return Expr(0);
  if (b.is_const(1)) return a;
  return build(ExprKind::Mul, a, b);
}

Expr make_div(Expr a, Expr b) {
  require(a, "/");
  require(b, "/");
  if (b.is_const(0)) fail("expression: division by zero in ", to_string(a), " / 0");
  if (both_const(a, b)) return Expr(floordiv(a.value(), b.value()));
  if (b.is_const(1)) return a;
  if (a.is_const(0)) return a;
  return build(ExprKind::Div, a, b);
}

Expr make_mod(Expr a, Expr b) {
  require(a, "%");
  require(b, "%");
  if (b.is_const(0)) fail("expression: modulo by zero in ", to_string(a), " % 0");
  if (both_const(a, b)) return Expr(floormod(a.value(), b.value()));
  if (b.is_const(1) || b.is_const(-1) || a.is_const(0)) return Expr(0);
  return build(ExprKind::Mod, a, b);
}

Expr make_min(Expr a, Expr b) {
  require(a, "min");
  require(b, "min");
  if (both_const(a, b)) return Expr(std::min(a.value(), b.value()));
  if (a == b) return a;
  if (a.is_const()) std::swap(a, b);
  return build(ExprKind::Min, a, b);
}

Expr make_max(Expr a, Expr b) {
  require(a, "max");
  require(b, "max");
  if (both_const(a, b)) return Expr(std::max(a.value(), b.value()));
  if (a == b) return a;
  if (a.is_const()) std::swap(a, b);
  return build(ExprKind::Max, a, b);
}

Expr make_lt(Expr a, Expr b) {
  require(a, "<");
  require(b, "<");
  if (both_const(a, b)) return Expr(a.value() < b.value() ? 1 : 0);
  if (a == b) return Expr(0);
  return build(ExprKind::Lt, a, b);
}

Expr make_eq(Expr a, Expr b) {
  require(a, "==");
  require(b, "==");
  if (both_const(a, b)) return Expr(a.value() == b.value() ? 1 : 0);
  if (a == b) return Expr(1);
  if (a.is_const()) std::swap(a, b);
  return build(ExprKind::Eq, a, b);
}

Expr make_and(Expr a, Expr b) {
  require(a, "&&");
  require(b, "&&");
  if (both_const(a, b)) return Expr((a.value() != 0 && b.value() != 0) ? 1 : 0);
  if (a.is_const()) std::swap(a, b);
  if (b.is_const(0)) return Expr(0);
  if (b.is_const() && is_boolean(a)) return a;
  if (a == b && is_boolean(a)) return a;
  return build(ExprKind::And, a, b);
}

Expr make_or(Expr a, Expr b) {
  require(a, "||");
  require(b, "||");
  if (both_const(a, b)) return Expr((a.value() != 0 || b.value() != 0) ? 1 : 0);
  if (a.is_const()) std::swap(a, b);
  if (b.is_const() && b.value() != 0) return Expr(1);
  if (b.is_const(0) && is_boolean(a)) return a;
  if (a == b && is_boolean(a)) return a;
  return build(ExprKind::Or, a, b);
}

Expr make_not(Expr a) {
  require(a, "!");
  if (a.is_const()) return Expr(a.value() == 0 ? 1 : 0);
  return build(ExprKind::Not, a);
}

Expr make_select(Expr cond, Expr a, Expr b) {
  require(cond, "select");
  require(a, "select");
  require(b, "select");
  if (cond.is_const()) return cond.value() != 0 ? a : b;
  if (a == b) return a;
  return build(ExprKind::Select, cond, a, b);
}

Expr make_binary(ExprKind kind, Expr a, Expr b) {
  switch (kind) {
    case ExprKind::Add: return make_add(a, b);
    case ExprKind::Mul: return make_mul(a, b);
    case ExprKind::Div: return make_div(a, b);
    case ExprKind::Mod: return make_mod(a, b);
    case ExprKind::Min: return make_min(a, b);
    case ExprKind::Max: return make_max(a, b);
    case ExprKind::Lt: return make_lt(a, b);
    case ExprKind::Eq: return make_eq(a, b);
    case ExprKind::And: return make_and(a, b);
    case ExprKind::Or: return make_or(a, b);
    default: fail("expression: ", expr_kind_name(kind), " is not a binary operation");
  }
}

// ---- structure ------------------------------------------------------------------

bool expr_less(const Expr& x, const Expr& y) {
  if (x == y) return false;
  if (!x.defined() || !y.defined()) return !x.defined();
  if (x.kind() != y.kind()) return x.kind() < y.kind();
  switch (x.kind()) {
    case ExprKind::Const: return x.value() < y.value();
    case ExprKind::Var:
      if (x.name() != y.name()) return x.name() < y.name();
      if (x.lo() != y.lo()) return x.lo() < y.lo();
      if (x.hi() != y.hi()) return x.hi() < y.hi();
      return expr_less(x.a(), y.a());
    default:
      if (x.a() != y.a()) return expr_less(x.a(), y.a());
      if (x.b() != y.b()) return expr_less(x.b(), y.b());
      return expr_less(x.c(), y.c());
  }
}

namespace {
template <typename F>
void visit_once(const Expr& root, F&& f) {
  std::unordered_set<const ExprNode*> seen;
  std::vector<Expr> stack{root};
  while (!stack.empty()) {
    Expr e = stack.back();
    stack.pop_back();
    if (!e.defined() || !seen.insert(e.get()).second) continue;
    f(e);
    if (e.kind() == ExprKind::Var) continue;  // a Var's extent is a bound, not an operand
    stack.push_back(e.c());
    stack.push_back(e.b());
    stack.push_back(e.a());
  }
}
}  // namespace

int64_t expr_tree_size(const Expr& e) {
  std::unordered_map<const ExprNode*, int64_t> memo;
  std::function<int64_t(const Expr&)> size = [&](const Expr& x) -> int64_t {
    if (!x.defined()) return 0;
    if (x.kind() == ExprKind::Const || x.kind() == ExprKind::Var) return 1;
    auto it = memo.find(x.get());
    if (it != memo.end()) return it->second;
    int64_t s = bound_add(bound_add(bound_add(1, size(x.a())), size(x.b())), size(x.c()));
    memo[x.get()] = s;
    return s;
  };
  return size(e);
}

bool is_constant_expr(const Expr& e) { return expr_vars(e).empty(); }

std::vector<Expr> expr_vars(const Expr& e) {
  std::vector<Expr> vars;
  visit_once(e, [&](const Expr& x) {
    if (x.kind() == ExprKind::Var) vars.push_back(x);
  });
  return vars;
}

// ---- printing ----------------------------------------------------------------------

namespace {

int precedence(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::Select: return 1;
    case ExprKind::Or: return 2;
    case ExprKind::And: return 3;
    case ExprKind::Eq: return 4;
    case ExprKind::Lt: return 5;
    case ExprKind::Add: return 6;
    case ExprKind::Mul:
    case ExprKind::Div:
    case ExprKind::Mod: return 7;
    case ExprKind::Not: return 8;
    case ExprKind::Const: return e.value() < 0 ? 8 : 9;
    default: return 9;
  }
}

void print(std::ostream& out, const Expr& e, int parent_precedence);

void print_operand(std::ostream& out, const Expr& e, int min_precedence) {
  if (precedence(e) < min_precedence) {
    out << '(';
    print(out, e, 0);
    out << ')';
  } else {
    print(out, e, min_precedence);
  }
}

// x + y*(-k) prints as x - y*k, x + (-k) as x - k.
bool negated_term(const Expr& e, Expr* positive) {
  if (e.is_const() && e.value() < 0 && e.value() != INT64_MIN) {
    *positive = Expr(-e.value());
    return true;
  }
  if (e.kind() == ExprKind::Mul && e.b().is_const() && e.b().value() < 0 && e.b().value() != INT64_MIN) {
    *positive = e.b().value() == -1 ? e.a() : make_mul(e.a(), Expr(-e.b().value()));
    return true;
  }
  return false;
}

void print(std::ostream& out, const Expr& e, int /*parent_precedence*/) {
  if (!e.defined()) {
    out << "<undef>";
    return;
  }
  int p = precedence(e);
  switch (e.kind()) {
    case ExprKind::Const: out << e.value(); return;
    case ExprKind::Var: out << e.name(); return;
    case ExprKind::Add: {
      print_operand(out, e.a(), p);
      Expr positive;
      if (negated_term(e.b(), &positive)) {
        out << " - ";
        print_operand(out, positive, p + 1);
      } else {
        out << " + ";
        print_operand(out, e.b(), p);
      }
      return;
    }
    case ExprKind::Mul:
    case ExprKind::Div:
    case ExprKind::Mod: {
      const char* op = e.kind() == ExprKind::Mul ? "*" : e.kind() == ExprKind::Div ? "/" : "%";
      print_operand(out, e.a(), p);
      out << op;
      print_operand(out, e.b(), p + 1);
      return;
    }
    case ExprKind::Lt:
    case ExprKind::Eq:
    case ExprKind::And:
    case ExprKind::Or: {
      const char* op = e.kind() == ExprKind::Lt    ? " < "
                       : e.kind() == ExprKind::Eq  ? " == "
                       : e.kind() == ExprKind::And ? " && "
                                                   : " || ";
      print_operand(out, e.a(), p + 1);
      out << op;
      print_operand(out, e.b(), p + 1);
      return;
    }
    case ExprKind::Not:
      out << '!';
      print_operand(out, e.a(), p);
      return;
    case ExprKind::Min:
    case ExprKind::Max:
      out << (e.kind() == ExprKind::Min ? "min(" : "max(");
      print(out, e.a(), 0);
      out << ", ";
      print(out, e.b(), 0);
      out << ')';
      return;
    case ExprKind::Select:
      print_operand(out, e.a(), p + 1);
      out << " ? ";
      print_operand(out, e.b(), p + 1);
      out << " : ";
      print_operand(out, e.c(), p);
      return;
  }
}

}  // namespace

std::string to_string(const Expr& e) {
  std::ostringstream out;
  print(out, e, 0);
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Expr& e) {
  print(out, e, 0);
  return out;
}

std::string to_string(const std::vector<Expr>& exprs) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < exprs.size(); ++i) {
    if (i) out << ", ";
    out << exprs[i];
  }
  out << ']';
  return out.str();
}

}  // namespace lumen
