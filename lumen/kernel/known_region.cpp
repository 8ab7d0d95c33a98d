#include "lumen/kernel/known_region.h"

#include <cmath>
#include <functional>
#include <unordered_map>

#include "lumen/core/expr_eval.h"
#include "lumen/core/linear_form.h"
#include "lumen/core/simplify.h"

namespace lumen::kernel {

namespace {

constexpr int64_t kExactFloat = int64_t{1} << 24;  // integers an f32 holds exactly

bool zero_one(const Expr& e) { return e.lo() >= 0 && e.hi() <= 1; }

bool is_boolean_kind(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::Lt:
    case ExprKind::Eq:
    case ExprKind::And:
    case ExprKind::Or:
    case ExprKind::Not: return true;
    default: return false;
  }
}

bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// The largest integer magnitude `dtype` holds exactly (0: not a number type here).
int64_t exact_limit(DType dtype) {
  switch (dtype) {
    case DType::F32: return kExactFloat;
    case DType::F16: return 2048;
    case DType::BF16: return 256;
    case DType::I32: return int64_t{1} << 31;
    case DType::I8: return 128;
    case DType::U8: return 255;
    case DType::Bool: return 1;
    case DType::I64:  // 2^53 keeps every index expression far from int64 overflow
    case DType::F64: return int64_t{1} << 53;
  }
  return 0;
}

// A value as `dtype` holds it: double for the 64-bit dtypes, float otherwise.
double held(double v, DType dtype) { return is_wide(dtype) ? v : static_cast<float>(v); }

// Exact knowledge `e` kept for a value of `dtype` when every value fits.
Known exact_in(const Expr& e, DType dtype) {
  Known k;
  Expr s = simplify(e);
  int64_t limit = exact_limit(dtype);
  if (dtype == DType::Bool && !zero_one(s)) s = as_predicate(s);
  if (s.lo() < -limit || s.hi() > limit) return k;
  if (dtype == DType::U8 && s.lo() < 0) return k;
  k.exact = s;
  return k;
}

// A constant of `dtype` (rounded as the dtype stores it; nothing when a 16-bit
// float would round it).
Known constant(double v, DType dtype) {
  if (std::isfinite(v) && std::floor(v) == v && std::fabs(v) <= static_cast<double>(exact_limit(dtype))) {
    return exact_in(Expr(static_cast<int64_t>(v)), dtype);
  }
  Known k;
  if (dtype == DType::F32) {
    v = static_cast<double>(static_cast<float>(v));
  } else if (is_float(dtype) && std::isfinite(v)) {
    return k;
  } else if (!is_float(dtype)) {
    return k;
  }
  k.live = Expr(0);
  k.value = v;
  return k;
}

double apply_unary(Op op, double x, DType dtype) {
  if (dtype == DType::F64) {
    switch (op) {
      case Op::Log2: return std::log2(x);
      case Op::Exp2: return std::exp2(x);
      case Op::Sin: return std::sin(x);
      case Op::Sqrt: return std::sqrt(x);
      case Op::Recip: return 1.0 / x;
      default: return NAN;
    }
  }
  auto f = static_cast<float>(x);
  switch (op) {
    case Op::Log2: return std::log2(f);
    case Op::Exp2: return std::exp2(f);
    case Op::Sin: return std::sin(f);
    case Op::Sqrt: return std::sqrt(f);
    case Op::Recip: return 1.0f / f;
    default: return NAN;
  }
}

// The first boolean subexpression (a comparison or logic) inside `e`.
Expr boolean_atom(const Expr& e) {
  if (!e.defined()) return Expr();
  if (is_boolean_kind(e)) return e;
  for (const Expr& child : {e.a(), e.b(), e.c()}) {
    if (e.kind() == ExprKind::Var || e.kind() == ExprKind::Const) break;
    Expr found = boolean_atom(child);
    if (found.defined()) return found;
  }
  return Expr();
}

Expr replace(const Expr& e, const Expr& from, const Expr& to) {
  if (e == from) return to;
  switch (e.kind()) {
    case ExprKind::Const:
    case ExprKind::Var: return e;
    case ExprKind::Not: return make_not(replace(e.a(), from, to));
    case ExprKind::Select: return make_select(replace(e.a(), from, to), replace(e.b(), from, to), replace(e.c(), from, to));
    default: return make_binary(e.kind(), replace(e.a(), from, to), replace(e.b(), from, to));
  }
}

bool all_known(const Known& r, double v) { return r.live.is_const(0) && same(r.value, v); }

Known add_known(const Known& a, const Known& b, DType dtype) {
  if (a.exact.defined() && b.exact.defined()) {
    return exact_in(dtype == DType::Bool ? logical_or(a.exact, b.exact) : a.exact + b.exact, dtype);
  }
  Known ra = region_of(a), rb = region_of(b);
  if (all_known(ra, 0)) return b;  // x + 0 (x = -0 reads +0: a sign the regions do not track)
  if (all_known(rb, 0)) return a;
  bool inf_a = std::isinf(ra.value) && !ra.live.is_const(1), inf_b = std::isinf(rb.value) && !rb.live.is_const(1);
  Known r;
  if (inf_a && !inf_b) {
    r.live = ra.live;  // ±inf + finite
    r.value = ra.value;
  } else if (inf_b && !inf_a) {
    r.live = rb.live;
    r.value = rb.value;
  } else if (!ra.live.is_const(1) && !rb.live.is_const(1)) {
    r.live = simplify(logical_or(ra.live, rb.live));
    r.value = held(ra.value + rb.value, dtype);
  }
  return r;
}

// Where `zero` is 0 and `other` holds a finite value, the product is 0.
Known zero_times(const Known& zero, const Known& other) {
  Known r;
  r.value = 0;
  r.live = zero.live;
  if (!other.live.is_const(1) && !std::isfinite(other.value)) r.live = simplify(logical_or(zero.live, logical_not(other.live)));
  return r;
}

Known mul_known(const Known& a, const Known& b, DType dtype) {
  if (a.exact.defined() && b.exact.defined()) {
    return exact_in(dtype == DType::Bool ? logical_and(a.exact, b.exact) : a.exact * b.exact, dtype);
  }
  Known ra = region_of(a), rb = region_of(b);
  if (all_known(ra, 1)) return b;
  if (all_known(rb, 1)) return a;
  if (!ra.live.is_const(1) && ra.value == 0) return zero_times(ra, rb);
  if (!rb.live.is_const(1) && rb.value == 0) return zero_times(rb, ra);
  Known r;
  if (!ra.live.is_const(1) && !rb.live.is_const(1)) {
    r.live = simplify(logical_or(ra.live, rb.live));
    r.value = held(ra.value * rb.value, dtype);
  }
  return r;
}

Known cast_known(const Known& k, DType from, DType to) {
  if (k.exact.defined()) {
    if (to == DType::Bool) return exact_in(as_predicate(k.exact), to);
    return exact_in(k.exact, to);
  }
  if (k.live.is_const(1)) return {};
  if (to == DType::Bool) {
    Known r;
    r.live = k.live;
    r.value = k.value != 0 ? 1 : 0;
    return r;
  }
  if (!is_float(to) || !is_float(from)) return {};
  Known c = constant(k.value, to);
  if (c.exact.defined() || !c.live.is_const(0) || !same(c.value, k.value)) return {};  // rounds: not tracked
  c.live = k.live;
  return c;
}

Known unary_known(Op op, const Known& k, DType dtype) {
  Known r = region_of(k);
  if (r.live.is_const(1)) return {};
  double v = apply_unary(op, r.value, dtype);
  Known c = constant(v, dtype);
  if (c.exact.defined()) {
    c.exact = Expr();
    c.live = Expr(0);
    c.value = v;
  }
  if (!c.live.is_const(0) || !same(c.value, v)) return {};
  c.live = r.live;
  return c;
}

}  // namespace

std::vector<Expr> unflatten(const Expr& flat, const Shape& shape) {
  std::vector<Expr> coords(shape.size());
  std::vector<Expr> strides = contiguous_strides(shape);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d].is_const(1) || shape[d].is_const(0) || strides[d].is_const(0)) {
      coords[d] = Expr(0);
      continue;
    }
    Expr c = flat / strides[d];
    coords[d] = simplify(d == 0 ? c : c % shape[d]);
  }
  return coords;
}

Expr as_predicate(const Expr& e0) {
  Expr e = simplify(e0);
  switch (e.kind()) {
    case ExprKind::Const: return Expr(e.value() != 0 ? 1 : 0);
    case ExprKind::And: return simplify(logical_and(as_predicate(e.a()), as_predicate(e.b())));
    case ExprKind::Or: return simplify(logical_or(as_predicate(e.a()), as_predicate(e.b())));
    case ExprKind::Not: return simplify(logical_not(as_predicate(e.a())));
    case ExprKind::Lt:
      if (zero_one(e.a()) && e.b().is_const()) {  // m < c for a 0/1 m
        int64_t c = e.b().value();
        return c <= 0 ? Expr(0) : c == 1 ? simplify(logical_not(as_predicate(e.a()))) : Expr(1);
      }
      if (zero_one(e.b()) && e.a().is_const()) {  // c < m
        int64_t c = e.a().value();
        return c < 0 ? Expr(1) : c == 0 ? as_predicate(e.b()) : Expr(0);
      }
      return e;
    case ExprKind::Select:  // c ? x : y of 0/1 values: (c && x) || (!c && y)
      if (zero_one(e.b()) && zero_one(e.c())) {
        Expr c = as_predicate(e.a());
        return simplify(logical_or(logical_and(c, as_predicate(e.b())), logical_and(logical_not(c), as_predicate(e.c()))));
      }
      break;
    case ExprKind::Eq:
      for (int side = 0; side < 2; ++side) {
        Expr m = side ? e.b() : e.a(), c = side ? e.a() : e.b();
        if (!zero_one(m) || !c.is_const()) continue;
        if (c.value() == 1) return as_predicate(m);
        if (c.value() == 0) return simplify(logical_not(as_predicate(m)));
        return Expr(0);
      }
      return e;
    default: break;
  }
  if (zero_one(e)) {
    auto form = LinearForm::of(e);
    if (form && form->terms.size() == 1 && zero_one(form->terms[0].first) && is_boolean_kind(form->terms[0].first)) {
      const auto& [term, coefficient] = form->terms[0];
      if (coefficient == 1 && form->constant == 0) return as_predicate(term);
      if (coefficient == -1 && form->constant == 1) return simplify(logical_not(as_predicate(term)));
    }
  }
  return simplify(ne(e, Expr(0)));
}

Known region_of(const Known& k) {
  if (!k.exact.defined()) return k;
  Known r;
  if (k.exact.is_const()) {
    r.live = Expr(0);
    r.value = static_cast<double>(k.exact.value());
    return r;
  }
  r.live = as_predicate(k.exact);  // 0 wherever the value is not non-zero
  r.value = 0;
  return r;
}

Known select_known(const Expr& cond0, const Known& t, const Known& f) {
  Expr cond = as_predicate(cond0);
  if (cond.is_const()) return cond.value() ? t : f;
  if (t.exact.defined() && f.exact.defined()) {
    Known k;
    k.exact = simplify(select(cond, t.exact, f.exact));
    return k;
  }
  Known rt = region_of(t), rf = region_of(f);
  Known best;
  for (double v : {rt.value, rf.value}) {
    Expr lt_ = same(rt.value, v) ? rt.live : Expr(1), lf = same(rf.value, v) ? rf.live : Expr(1);
    Expr live = simplify(logical_or(logical_and(cond, lt_), logical_and(logical_not(cond), lf)));
    if (live.is_const(1)) continue;
    best.live = live;
    best.value = v;
    if (rt.live.is_const(0) || rf.live.is_const(0)) break;  // a constant branch: its value is the one to keep
  }
  return best;
}

Known KnownRegions::at(NodeId n, const std::vector<Expr>& coords) {
  std::vector<const ExprNode*> key;
  for (const Expr& c : coords) key.push_back(c.get());
  auto it = memo_.find({n, key});
  if (it != memo_.end()) return it->second;
  Known k = compute(n, coords);
  memo_[{n, key}] = k;
  return k;
}

Known KnownRegions::through(const Edge& e, const std::vector<Expr>& coords) {
  View::Index vi = e.view.index(coords);
  Expr valid = simplify(vi.valid);
  const Node& producer = graph_.node(e.node);
  Known zero = exact_in(Expr(0), producer.dtype);
  if (valid.is_const(0)) return zero;
  Known k = at(e.node, unflatten(simplify(vi.index), producer.shape));
  if (valid.is_const(1)) return k;
  return select_known(valid, k, zero);  // padding reads 0
}

Known KnownRegions::compute(NodeId n, const std::vector<Expr>& coords) {
  const Node& node = graph_.node(n);
  switch (node.op) {
    case Op::Constant: {
      if (!node.pattern.defined()) return constant(node.number, node.dtype);
      std::unordered_map<Expr, Expr, ExprHash> at;
      std::vector<Expr> idx = loop_indices(node.shape);
      for (size_t d = 0; d < idx.size(); ++d) at[idx[d]] = coords[d];
      return exact_in(substitute(node.pattern, at), node.dtype);
    }
    case Op::Cast: return cast_known(through(node.inputs[0], coords), graph_.node(node.inputs[0].node).dtype, node.dtype);
    case Op::Contiguous: return through(node.inputs[0], coords);
    case Op::Gather: return gather(node, coords);
    case Op::Add: return add_known(through(node.inputs[0], coords), through(node.inputs[1], coords), node.dtype);
    case Op::Mul: return mul_known(through(node.inputs[0], coords), through(node.inputs[1], coords), node.dtype);
    case Op::LessThan: {
      Known a = through(node.inputs[0], coords), b = through(node.inputs[1], coords);
      if (a.exact.defined() && b.exact.defined()) return exact_in(lt(a.exact, b.exact), DType::Bool);
      return {};
    }
    default: break;
  }
  if (is_unary(node.op)) return unary_known(node.op, through(node.inputs[0], coords), node.dtype);
  return {};  // inputs, reductions, Mod: nothing known
}

// A gather whose index is known reads a known place; an index that picks one
// of two places by a predicate (where) is a select of the two reads.
Known KnownRegions::gather(const Node& node, const std::vector<Expr>& coords) {
  auto axis = static_cast<size_t>(node.axis);
  size_t k = node.inputs[1].view.rank();
  std::vector<Expr> idx(coords.begin() + static_cast<long>(axis), coords.begin() + static_cast<long>(axis + k));
  Known index = through(node.inputs[1], idx);
  if (!index.exact.defined()) return {};
  Expr size = node.inputs[0].view.shape()[axis];
  std::function<Known(const Expr&, int)> read = [&](const Expr& place, int depth) -> Known {
    Expr atom = boolean_atom(place);
    if (atom.defined() && atom != place && depth < 3) {
      return select_known(atom, read(simplify(replace(place, atom, Expr(1))), depth + 1),
                          read(simplify(replace(place, atom, Expr(0))), depth + 1));
    }
    if (!prove(le(Expr(0), place)) || !prove(lt(place, size))) return Known{};  // may fail at run time
    std::vector<Expr> at(coords.begin(), coords.begin() + static_cast<long>(axis));
    at.push_back(place);
    at.insert(at.end(), coords.begin() + static_cast<long>(axis + k), coords.end());
    return through(node.inputs[0], at);
  };
  return read(index.exact, 0);
}

std::optional<VarRange> reduction_live_range(KnownRegions& known, const Graph& graph, NodeId n,
                                             const std::vector<Expr>& coords, const std::vector<LoopVar>& lanes) {
  const Node& node = graph.node(n);
  if (!is_reduce(node.op)) return std::nullopt;
  const Expr& extent = node.inputs[0].view.shape()[static_cast<size_t>(node.axis)];
  // Dynamic axes too (a prefill's causal keys, seq_blocks*16 + past): the
  // restricted loop's variable keeps the whole axis as its bound
  // (lower_reduce.cpp), so index math through it still simplifies.
  Expr r = Expr::index("known_r", extent);
  std::vector<Expr> at = coords;
  at.insert(at.begin() + node.axis, r);
  Known term = region_of(known.through(node.inputs[0], at));
  if (term.live.is_const(1)) return std::nullopt;
  bool identity = node.op == Op::SumReduce ? term.value == 0 : (std::isinf(term.value) && term.value < 0);
  if (!identity) return std::nullopt;
  return live_range(as_predicate(term.live), r, extent, lanes);
}

}  // namespace lumen::kernel
