#include "lumen/core/expr_eval.h"

#include <algorithm>
#include <functional>

#include "lumen/core/error.h"
#include "lumen/core/int_math.h"

namespace lumen {

namespace {

int64_t apply(ExprKind kind, int64_t a, int64_t b, int64_t c) {
  switch (kind) {
    case ExprKind::Add: return checked_add(a, b);
    case ExprKind::Mul: return checked_mul(a, b);
    case ExprKind::Div: return floordiv(a, b);
    case ExprKind::Mod: return floormod(a, b);
    case ExprKind::Min: return std::min(a, b);
    case ExprKind::Max: return std::max(a, b);
    case ExprKind::Lt: return a < b ? 1 : 0;
    case ExprKind::Eq: return a == b ? 1 : 0;
    case ExprKind::And: return (a != 0 && b != 0) ? 1 : 0;
    case ExprKind::Or: return (a != 0 || b != 0) ? 1 : 0;
    case ExprKind::Not: return a == 0 ? 1 : 0;
    case ExprKind::Select: return a != 0 ? b : c;
    default: fail("expression: cannot apply ", expr_kind_name(kind));
  }
}

}  // namespace

int64_t evaluate(const Expr& e, const Bindings& bindings) {
  std::unordered_map<const ExprNode*, int64_t> memo;
  std::function<int64_t(const Expr&)> eval = [&](const Expr& x) -> int64_t {
    switch (x.kind()) {
      case ExprKind::Const: return x.value();
      case ExprKind::Var: {
        auto it = bindings.find(x.name());
        if (it == bindings.end()) fail("expression: variable '", x.name(), "' is not bound in ", to_string(e));
        return it->second;
      }
      default: break;
    }
    auto it = memo.find(x.get());
    if (it != memo.end()) return it->second;
    int64_t result;
    if (x.kind() == ExprKind::Select) {  // only the chosen branch is evaluated
      result = eval(x.a()) != 0 ? eval(x.b()) : eval(x.c());
    } else if (x.kind() == ExprKind::Not) {
      result = apply(x.kind(), eval(x.a()), 0, 0);
    } else {
      result = apply(x.kind(), eval(x.a()), eval(x.b()), 0);
    }
    memo[x.get()] = result;
    return result;
  };
  return eval(e);
}

Expr substitute(const Expr& e, const std::unordered_map<Expr, Expr, ExprHash>& replacements) {
  std::unordered_map<const ExprNode*, Expr> memo;
  std::function<Expr(const Expr&)> sub = [&](const Expr& x) -> Expr {
    if (!x.defined() || x.is_const()) return x;
    auto r = replacements.find(x);
    if (r != replacements.end()) return r->second;
    if (x.kind() == ExprKind::Var) return x;
    auto it = memo.find(x.get());
    if (it != memo.end()) return it->second;
    Expr a = sub(x.a()), b = sub(x.b()), c = sub(x.c());
    Expr result;
    if (a == x.a() && b == x.b() && c == x.c()) {
      result = x;
    } else if (x.kind() == ExprKind::Select) {
      result = make_select(a, b, c);
    } else if (x.kind() == ExprKind::Not) {
      result = make_not(a);
    } else {
      result = make_binary(x.kind(), a, b);
    }
    memo[x.get()] = result;
    return result;
  };
  return sub(e);
}

Expr substitute(const Expr& e, const Bindings& bindings) {
  std::unordered_map<Expr, Expr, ExprHash> replacements;
  for (const Expr& v : expr_vars(e)) {
    auto it = bindings.find(v.name());
    if (it != bindings.end()) replacements[v] = Expr(it->second);
  }
  return substitute(e, replacements);
}

ExprProgram::ExprProgram(const Expr& e, const std::vector<std::string>& slots, const Bindings& fixed) {
  Expr folded = substitute(e, fixed);
  std::unordered_map<const ExprNode*, int32_t> reg_of;
  std::function<int32_t(const Expr&)> emit = [&](const Expr& x) -> int32_t {
    auto it = reg_of.find(x.get());
    if (it != reg_of.end()) return it->second;
    Instr ins{x.kind(), -1, -1, -1, 0};
    if (x.kind() == ExprKind::Const) {
      ins.value = x.value();
    } else if (x.kind() == ExprKind::Var) {
      auto slot = std::find(slots.begin(), slots.end(), x.name());
      if (slot == slots.end()) fail("expression: variable '", x.name(), "' is not bound in ", to_string(e));
      ins.value = slot - slots.begin();
    } else {
      ins.a = emit(x.a());
      if (x.b().defined()) ins.b = emit(x.b());
      if (x.c().defined()) ins.c = emit(x.c());
    }
    code_.push_back(ins);
    int32_t reg = static_cast<int32_t>(code_.size() - 1);
    reg_of[x.get()] = reg;
    return reg;
  };
  emit(folded);
  registers_.resize(code_.size());
}

int64_t ExprProgram::run(const int64_t* slot_values) const {
  int64_t* r = registers_.data();
  for (size_t i = 0; i < code_.size(); ++i) {
    const Instr& ins = code_[i];
    switch (ins.kind) {
      case ExprKind::Const: r[i] = ins.value; break;
      case ExprKind::Var: r[i] = slot_values[ins.value]; break;
      case ExprKind::Not: r[i] = r[ins.a] == 0 ? 1 : 0; break;
      // Both select branches were computed; a branch that would fault (e.g. a
      // division guarded by the condition) must not abort the program.
      case ExprKind::Select: r[i] = r[ins.a] != 0 ? r[ins.b] : r[ins.c]; break;
      default: r[i] = apply(ins.kind, r[ins.a], r[ins.b], 0); break;
    }
  }
  return r[code_.size() - 1];
}

}  // namespace lumen
