#include "lumen/kernel/ir.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <unordered_set>

#include "lumen/core/error.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/simplify.h"

namespace lumen::kernel {

namespace {

Value make(ValueNode n) { return std::make_shared<const ValueNode>(std::move(n)); }

void require(const Value& v, const char* what) {
  if (!v) fail("kernel IR: ", what, " has an undefined operand (internal error)");
}

}  // namespace

Value number(double v, DType dtype) {
  ValueNode n{ValueKind::Number, dtype};
  n.number = v;
  return make(std::move(n));
}

Value index_value(const Expr& e, DType dtype) {
  ValueNode n{ValueKind::Index, dtype};
  n.index = e;
  return make(std::move(n));
}

namespace {
bool is_number(const Value& v, double x) { return v->kind == ValueKind::Number && v->number == x; }
bool is_number(const Value& v) { return v->kind == ValueKind::Number; }
// select(c, number, number): a value with two possible values (a mask).
bool is_two_numbers(const Value& v) {
  return v->kind == ValueKind::Select && is_number(v->args[1]) && is_number(v->args[2]);
}

// Folding computes as the interpreter does: in double, rounded to the dtype
// after each op. Only f32 (and bool results) fold.
std::optional<double> fold_unary(Op op, double x) {
  switch (op) {
    case Op::Log2: return static_cast<float>(std::log2(x));
    case Op::Exp2: return static_cast<float>(std::exp2(x));
    case Op::Sin: return static_cast<float>(std::sin(x));
    case Op::Sqrt: return static_cast<float>(std::sqrt(x));
    case Op::Recip: return static_cast<float>(1.0 / x);
    default: return std::nullopt;
  }
}

std::optional<double> fold_binary(Op op, double a, double b) {
  switch (op) {
    case Op::Add: return static_cast<float>(a + b);
    case Op::Mul: return static_cast<float>(a * b);
    case Op::LessThan: return a < b ? 1.0 : 0.0;
    default: return std::nullopt;
  }
}
// A boolean condition known at compile time: 1 true, 0 false, -1 unknown.
int known(const Value& cond) {
  if (cond->kind == ValueKind::Number) return cond->number != 0 ? 1 : 0;
  if (cond->kind == ValueKind::Index && cond->index.is_const()) return cond->index.value() != 0 ? 1 : 0;
  return -1;
}
}  // namespace

Value load(int buffer, DType dtype, const Expr& index, const Expr& valid) {
  if (valid.is_const(0)) return number(0, dtype);
  ValueNode n{ValueKind::Load, dtype};
  n.buffer = buffer;
  n.index = index;
  n.valid = valid;
  return make(std::move(n));
}

Value unary(Op op, const Value& a) {
  require(a, op_name(op));
  // Constants fold, and so do masks: f(select(c, x, y)) = select(c, f(x), f(y))
  // (a causal mask's log2(1 - float(c)) becomes select(c, -inf, 0)).
  if (a->dtype == DType::F32 && is_number(a)) {
    if (auto r = fold_unary(op, a->number)) return number(*r, DType::F32);
  }
  if (a->dtype == DType::F32 && is_two_numbers(a)) {
    return select(a->args[0], unary(op, a->args[1]), unary(op, a->args[2]));
  }
  ValueNode n{ValueKind::Unary, a->dtype};
  n.op = op;
  n.args = {a};
  return make(std::move(n));
}

Value binary(Op op, const Value& a, const Value& b) {
  require(a, op_name(op));
  require(b, op_name(op));
  if (a->dtype != b->dtype) fail("kernel IR: ", op_name(op), " operands differ in dtype (internal error)");
  // x + 0 and x * 1 fold (x + 0 only differs for x = -0, which then reads +0).
  if (op == Op::Add && is_number(b, 0)) return a;
  if (op == Op::Add && is_number(a, 0)) return b;
  if (op == Op::Mul && is_number(b, 1)) return a;
  if (op == Op::Mul && is_number(a, 1)) return b;
  if (a->dtype == DType::F32 && is_number(a) && is_number(b)) {
    if (auto r = fold_binary(op, a->number, b->number)) return number(*r, op == Op::LessThan ? DType::Bool : DType::F32);
  }
  if (a->dtype == DType::F32 && is_two_numbers(a) && is_number(b)) {
    return select(a->args[0], binary(op, a->args[1], b), binary(op, a->args[2], b));
  }
  if (a->dtype == DType::F32 && is_number(a) && is_two_numbers(b)) {
    return select(b->args[0], binary(op, a, b->args[1]), binary(op, a, b->args[2]));
  }
  ValueNode n{ValueKind::Binary, op == Op::LessThan ? DType::Bool : a->dtype};
  n.op = op;
  n.args = {a, b};
  return make(std::move(n));
}

Value cast(const Value& a, DType dtype) {
  require(a, "Cast");
  if (a->dtype == dtype) return a;
  // A boolean becomes a mask of two numbers, so arithmetic on it can fold.
  if (a->dtype == DType::Bool && dtype == DType::F32 && !is_number(a)) {
    return select(a, number(1, DType::F32), number(0, DType::F32));
  }
  ValueNode n{ValueKind::Cast, dtype};
  n.args = {a};
  return make(std::move(n));
}

Value select(const Value& cond, const Value& a, const Value& b) {
  require(cond, "Select");
  require(a, "Select");
  require(b, "Select");
  if (int k = known(cond); k >= 0) return k ? a : b;
  ValueNode n{ValueKind::Select, a->dtype};
  n.args = {cond, a, b};
  return make(std::move(n));
}

Value acc_value(int acc, DType dtype) {
  ValueNode n{ValueKind::Acc, dtype};
  n.acc = acc;
  return make(std::move(n));
}

Value maximum(const Value& a, const Value& b) {
  require(a, "Max");
  require(b, "Max");
  ValueNode n{ValueKind::Max, a->dtype};
  n.args = {a, b};
  return make(std::move(n));
}

Value pair_dot(const Value& a0, const Value& b0, const Value& a1, const Value& b1) {
  for (const Value& v : {a0, b0, a1, b1}) {
    require(v, "PairDot");
    if (v->dtype != DType::F32) fail("kernel IR: PairDot takes f32 operands, got ", dtype_name(v->dtype), " (internal error)");
  }
  ValueNode n{ValueKind::PairDot, DType::F32};
  n.args = {a0, b0, a1, b1};
  return make(std::move(n));
}

std::vector<Expr> value_vars(const Value& root) {
  std::vector<Expr> vars;
  std::unordered_set<const ValueNode*> seen;
  auto add = [&](const Expr& e) {
    if (!e.defined()) return;
    for (const Expr& v : expr_vars(e)) {
      if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
    }
  };
  std::function<void(const Value&)> walk = [&](const Value& v) {
    if (!v || !seen.insert(v.get()).second) return;
    add(v->index);
    add(v->valid);
    for (const Value& a : v->args) walk(a);
  };
  walk(root);
  return vars;
}

Stmt Stmt::make_loop(Expr var, Expr extent, LoopKind kind, Block body) {
  Stmt s{StmtKind::Loop};
  s.var = var;
  s.extent = extent;
  s.loop = kind;
  s.body = std::move(body);
  return s;
}

Stmt Stmt::acc_init(int acc, DType dtype, Combine combine) {
  Stmt s{StmtKind::AccInit};
  s.acc = acc;
  s.dtype = dtype;
  s.combine = combine;
  return s;
}

Stmt Stmt::acc_update(int acc, Combine combine, Value value) {
  Stmt s{StmtKind::AccUpdate};
  s.acc = acc;
  s.combine = combine;
  s.value = std::move(value);
  return s;
}

Stmt Stmt::store(int buffer, Expr index, Value value) {
  Stmt s{StmtKind::Store};
  s.buffer = buffer;
  s.index = index;
  s.value = std::move(value);
  return s;
}

Stmt Stmt::bind(Expr var, Value value, Expr bound, Expr guard) {
  Stmt s{StmtKind::Bind};
  s.guard = guard;
  s.var = var;
  s.value = std::move(value);
  s.bound = bound;
  return s;
}

const char* loop_kind_name(LoopKind kind) {
  switch (kind) {
    case LoopKind::Serial: return "serial";
    case LoopKind::Parallel: return "parallel";
    case LoopKind::Unroll: return "unroll";
    case LoopKind::Vector: return "vector";
  }
  return "?";
}

bool is_lane(LoopKind kind) { return kind == LoopKind::Unroll || kind == LoopKind::Vector; }

void walk(const Block& block, const std::function<void(const Stmt&)>& f) {
  for (const Stmt& s : block) {
    f(s);
    if (s.kind == StmtKind::Loop) walk(s.body, f);
  }
}

Value substituted(const Value& v, const VarMap& vars) {
  ValueNode n = *v;
  if (n.index.defined()) n.index = simplify(substitute(n.index, vars));
  if (n.valid.defined()) n.valid = simplify(substitute(n.valid, vars));
  for (Value& a : n.args) a = substituted(a, vars);
  return std::make_shared<const ValueNode>(std::move(n));
}

Block substituted(const Block& block, const VarMap& vars) {
  Block out;
  for (Stmt s : block) {
    auto sub = [&](const Expr& e) { return e.defined() ? simplify(substitute(e, vars)) : e; };
    s.extent = sub(s.extent);
    s.index = sub(s.index);
    s.bound = sub(s.bound);
    s.guard = sub(s.guard);
    if (s.value) s.value = substituted(s.value, vars);
    if (s.kind == StmtKind::Loop) s.body = substituted(s.body, vars);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace lumen::kernel
