#include "lumen/kernel/ir.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "lumen/core/error.h"

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
  ValueNode n{ValueKind::Binary, op == Op::LessThan ? DType::Bool : a->dtype};
  n.op = op;
  n.args = {a, b};
  return make(std::move(n));
}

Value cast(const Value& a, DType dtype) {
  require(a, "Cast");
  if (a->dtype == dtype) return a;
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

}  // namespace lumen::kernel
