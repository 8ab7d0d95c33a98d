// Expr — symbolic integers: dimensions, loop indices and the index math of views.
//
// Nodes are immutable and hash-consed: building the same structure twice yields
// the same pointer, so `a == b` is structural equality in O(1) and equal
// subexpressions are shared. Nodes live for the whole process.
//
// Semantics (all on int64, overflow is an Error when evaluating):
//   a / b   floor division (rounds toward -infinity), b == 0 is an Error
//   a % b   floor modulo: the result has the sign of b, a == (a / b) * b + a % b
//   lt, eq, logical_and, logical_or, logical_not yield 0 or 1
//   select(c, a, b) is a when c != 0, else b
//
// Every node knows a conservative interval [lo, hi] of its values, computed
// when it is built from the bounds of its variables; the simplifier proves
// facts with it.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace lumen {

enum class ExprKind : uint8_t { Const, Var, Add, Mul, Div, Mod, Min, Max, Lt, Eq, And, Or, Not, Select };

const char* expr_kind_name(ExprKind kind);

// Largest magnitude a bound may take; intervals saturate here so that bound
// arithmetic never overflows. Dynamic dims are bounded by kMaxDim.
inline constexpr int64_t kBoundInf = int64_t{1} << 62;
inline constexpr int64_t kMaxDim = int64_t{1} << 40;

struct ExprNode;

class Expr {
 public:
  Expr() = default;  // the null expression; most functions reject it
  Expr(int64_t value);  // NOLINT: implicit, so `x + 1` reads naturally
  Expr(int value) : Expr(static_cast<int64_t>(value)) {}  // NOLINT
  explicit Expr(const ExprNode* node) : node_(node) {}

  // A named integer variable with inclusive bounds [lo, hi]. `extent`, when
  // given, is a symbolic exclusive upper bound (a loop index over a dynamic dim
  // has extent `seq`), which lets the simplifier prove `i < seq`.
  static Expr var(const std::string& name, int64_t lo, int64_t hi);
  static Expr var(const std::string& name, int64_t lo, int64_t hi, Expr extent);
  // A dynamic dimension (sequence length, batch): a variable in [0, kMaxDim].
  static Expr symbol(const std::string& name);
  // A loop/element index over [0, extent): bounds come from the extent.
  static Expr index(const std::string& name, Expr extent);

  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_; }
  const ExprNode* operator->() const { return node_; }

  ExprKind kind() const;
  bool is_const() const;
  bool is_const(int64_t value) const;
  int64_t value() const;           // only for Const
  const std::string& name() const;  // only for Var
  int64_t lo() const;               // lower bound of the value
  int64_t hi() const;               // upper bound of the value
  Expr a() const;
  Expr b() const;
  Expr c() const;

  // Structural equality (hash-consing makes it pointer equality).
  friend bool operator==(const Expr& x, const Expr& y) { return x.node_ == y.node_; }
  friend bool operator!=(const Expr& x, const Expr& y) { return x.node_ != y.node_; }

 private:
  const ExprNode* node_ = nullptr;
};

struct ExprNode {
  ExprKind kind;
  int64_t value = 0;   // Const
  std::string name;    // Var
  int64_t lo = 0;      // value interval, inclusive
  int64_t hi = 0;
  Expr a, b, c;        // operands (Var: a = symbolic extent, if any)
  size_t hash = 0;
  uint64_t id = 0;     // creation order, for diagnostics only
};

// Factories: validate operands, fold constants and trivial identities, then
// hash-cons. They do not simplify further; see simplify.h.
Expr make_add(Expr a, Expr b);
Expr make_mul(Expr a, Expr b);
Expr make_div(Expr a, Expr b);
Expr make_mod(Expr a, Expr b);
Expr make_min(Expr a, Expr b);
Expr make_max(Expr a, Expr b);
Expr make_lt(Expr a, Expr b);
Expr make_eq(Expr a, Expr b);
Expr make_and(Expr a, Expr b);
Expr make_or(Expr a, Expr b);
Expr make_not(Expr a);
Expr make_select(Expr cond, Expr a, Expr b);
Expr make_binary(ExprKind kind, Expr a, Expr b);

inline Expr operator+(Expr a, Expr b) { return make_add(a, b); }
inline Expr operator-(Expr a) { return make_mul(a, Expr(int64_t{-1})); }
inline Expr operator-(Expr a, Expr b) { return make_add(a, -b); }
inline Expr operator*(Expr a, Expr b) { return make_mul(a, b); }
inline Expr operator/(Expr a, Expr b) { return make_div(a, b); }
inline Expr operator%(Expr a, Expr b) { return make_mod(a, b); }
inline Expr min(Expr a, Expr b) { return make_min(a, b); }
inline Expr max(Expr a, Expr b) { return make_max(a, b); }
inline Expr lt(Expr a, Expr b) { return make_lt(a, b); }
inline Expr le(Expr a, Expr b) { return make_lt(a, b + 1); }
inline Expr gt(Expr a, Expr b) { return make_lt(b, a); }
inline Expr ge(Expr a, Expr b) { return make_lt(b, a + 1); }
inline Expr eq(Expr a, Expr b) { return make_eq(a, b); }
inline Expr ne(Expr a, Expr b) { return make_not(make_eq(a, b)); }
inline Expr logical_and(Expr a, Expr b) { return make_and(a, b); }
inline Expr logical_or(Expr a, Expr b) { return make_or(a, b); }
inline Expr logical_not(Expr a) { return make_not(a); }
inline Expr select(Expr cond, Expr a, Expr b) { return make_select(cond, a, b); }

// A total, deterministic structural order (used for canonical operand order).
bool expr_less(const Expr& x, const Expr& y);

// Number of nodes when the expression is written out as a tree.
int64_t expr_tree_size(const Expr& e);

// True if `e` mentions no variables.
bool is_constant_expr(const Expr& e);

// Collects the distinct variables `e` mentions, in first-seen order.
std::vector<Expr> expr_vars(const Expr& e);

std::string to_string(const Expr& e);
std::ostream& operator<<(std::ostream& out, const Expr& e);
std::string to_string(const std::vector<Expr>& exprs);  // "[3, seq, 4]"

struct ExprHash {
  size_t operator()(const Expr& e) const { return std::hash<const void*>()(e.get()); }
};

}  // namespace lumen
