#include "lumen/egraph/rules.h"

#include <cmath>

#include "lumen/core/simplify.h"

namespace lumen::egraph {

namespace {

EChild identity(EGraph& g, ClassId c) { return g.identity_edge(c); }

EChild prim(EGraph& g, Op op, std::vector<EChild> children, int axis = -1, DType cast_to = DType::F32) {
  ENode n;
  n.op = op;
  n.axis = axis;
  n.dtype = op == Op::Cast ? cast_to : DType::F32;
  n.children = std::move(children);
  return identity(g, g.add(std::move(n)));
}

const View& view_of(const Match& m, const EChild& e) { return m.egraph.views().get(e.view); }

bool proven_nonempty(const Expr& extent) { return prove(ge(extent, Expr(1))); }

// True if the operand reads the same element for every index along `axis`:
// its outermost layer ignores that index (stride 0, no partial mask).
bool constant_along(const View& v, int axis) {
  const ViewLayer& top = v.layers().back();
  auto k = static_cast<size_t>(axis);
  if (top.strides[k].is_const(0) &&
      (top.mask.empty() || (top.mask[k].first.is_const(0) && simplify(top.mask[k].second) == simplify(top.shape[k])))) {
    return true;
  }
  if (v.layers().size() == 1) return false;
  // Stacked layers (a broadcast seen through a permute, say): whether the
  // simplified index and validity mention the axis's loop index at all.
  View::Index ix = v.index();
  Expr var = loop_index(v.shape(), k);
  for (const Expr& e : {ix.index, ix.valid}) {
    for (const Expr& used : expr_vars(e)) {
      if (used == var) return false;
    }
  }
  return true;
}

Shape without(const Shape& s, int axis) {
  Shape out = s;
  out.erase(out.begin() + axis);
  return out;
}

View drop_axis(const View& v, int axis) { return v.slice(axis, 0, 1).reshape(without(v.shape(), axis)); }

View insert_axis(const View& v, int axis, const Expr& extent) {
  Shape one = v.shape();
  one.insert(one.begin() + axis, Expr(1));
  Shape wide = one;
  wide[static_cast<size_t>(axis)] = extent;
  return v.reshape(one).expand(wide);
}

double fold_unary(Op op, double x) {
  switch (op) {
    case Op::Exp2: return std::exp2(x);
    case Op::Log2: return std::log2(x);
    case Op::Sin: return std::sin(x);
    case Op::Sqrt: return std::sqrt(x);
    case Op::Recip: return 1.0 / x;
    default: return x;
  }
}

const char* pattern_name(Op op) {
  switch (op) {
    case Op::Exp2: return "exp2";
    case Op::Log2: return "log2";
    case Op::Sin: return "sin";
    case Op::Sqrt: return "sqrt";
    case Op::Recip: return "recip";
    case Op::Add: return "add";
    case Op::Mul: return "mul";
    case Op::Mod: return "mod";
    case Op::LessThan: return "lt";
    case Op::Cast: return "cast";
    case Op::SumReduce: return "sum";
    case Op::MaxReduce: return "max";
    default: return "?";
  }
}

std::string unary(Op op) { return std::string("(") + pattern_name(op) + " ?a)"; }
std::string binary(Op op) { return std::string("(") + pattern_name(op) + " ?a ?b)"; }

void algebra_rules(std::vector<Rule>& rules) {
  rules.push_back(rule("add-comm", "(add ?a ?b)", "(add ?b ?a)"));
  rules.push_back(rule("mul-comm", "(mul ?a ?b)", "(mul ?b ?a)"));
  rules.push_back(rule("add-assoc", "(add (add ?a ?b) ?c)", "(add ?a (add ?b ?c))"));
  rules.push_back(rule("mul-assoc", "(mul (mul ?a ?b) ?c)", "(mul ?a (mul ?b ?c))"));
  rules.push_back(rule("mul-distribute", "(mul ?a (add ?b ?c))", "(add (mul ?a ?b) (mul ?a ?c))"));
  rules.push_back(rule("mul-factor", "(add (mul ?a ?b) (mul ?a ?c))", "(mul ?a (add ?b ?c))"));
  rules.push_back(rule("add-self", "(add ?a ?a)", "(mul ?a 2)"));
  rules.push_back(rule("add-zero", "(add ?a 0)", "?a"));
  rules.push_back(rule("mul-one", "(mul ?a 1)", "?a"));
}

void exp2_log2_rules(std::vector<Rule>& rules) {
  rules.push_back(rule("exp2-of-sum", "(exp2 (add ?a ?b))", "(mul (exp2 ?a) (exp2 ?b))"));
  rules.push_back(rule("exp2-product", "(mul (exp2 ?a) (exp2 ?b))", "(exp2 (add ?a ?b))"));
  rules.push_back(rule("log2-exp2", "(log2 (exp2 ?a))", "?a"));
  rules.push_back(rule("recip-exp2", "(recip (exp2 ?a))", "(exp2 (mul ?a -1))"));
  rules.push_back(rule("recip-product", "(recip (mul ?a ?b))", "(mul (recip ?a) (recip ?b))"));
  rules.push_back(rule("recip-recip", "(recip (recip ?a))", "?a"));
}

void fold_rules(std::vector<Rule>& rules) {
  for (Op op : {Op::Exp2, Op::Log2, Op::Sin, Op::Sqrt, Op::Recip}) {
    rules.push_back(rule(std::string("fold-") + pattern_name(op), unary(op), [op](const Match& m) -> std::optional<EChild> {
      EChild a = m.var("a");
      auto value = m.egraph.uniform_constant(a.cls);
      DType dtype = m.egraph.dtype(m.root);
      if (!value || view_of(m, a).has_mask() || !is_float(dtype)) return std::nullopt;
      return broadcast_constant(m.egraph, round_to_dtype(fold_unary(op, round_to_dtype(*value, dtype)), dtype), m.egraph.shape(m.root), dtype);
    }));
  }
  for (Op op : {Op::Add, Op::Mul}) {
    rules.push_back(rule(std::string("fold-") + pattern_name(op), binary(op), [op](const Match& m) -> std::optional<EChild> {
      EChild a = m.var("a"), b = m.var("b");
      auto x = m.egraph.uniform_constant(a.cls), y = m.egraph.uniform_constant(b.cls);
      DType dtype = m.egraph.dtype(m.root);
      if (!x || !y || view_of(m, a).has_mask() || view_of(m, b).has_mask() || !is_float(dtype)) return std::nullopt;
      double xr = round_to_dtype(*x, dtype), yr = round_to_dtype(*y, dtype);  // as the constants are stored
      double v = op == Op::Add ? xr + yr : xr * yr;
      return broadcast_constant(m.egraph, round_to_dtype(v, dtype), m.egraph.shape(m.root), dtype);
    }));
  }
}

void view_rules(std::vector<Rule>& rules) {
  for (Op op : {Op::Exp2, Op::Log2, Op::Sin, Op::Sqrt, Op::Recip, Op::Cast}) {
    rules.push_back(rule(std::string(pattern_name(op)) + "-before-view", unary(op), [op](const Match& m) -> std::optional<EChild> {
      EChild a = m.var("a");
      if (m.egraph.views().is_identity(a.view) || view_of(m, a).has_mask()) return std::nullopt;
      EChild inner = prim(m.egraph, op, {identity(m.egraph, a.cls)}, -1, m.egraph.dtype(m.root));
      return EChild{inner.cls, a.view};
    }));
  }
  for (Op op : {Op::Add, Op::Mul, Op::Mod, Op::LessThan}) {
    rules.push_back(rule(std::string(pattern_name(op)) + "-before-view", binary(op), [op](const Match& m) -> std::optional<EChild> {
      EGraph& g = m.egraph;
      EChild a = m.var("a"), b = m.var("b");
      if (g.views().is_identity(a.view)) return std::nullopt;
      bool zero_at_zero = op == Op::Add || op == Op::Mul;
      if (a.view == b.view && (zero_at_zero || !view_of(m, a).has_mask())) {
        EChild inner = prim(g, op, {identity(g, a.cls), identity(g, b.cls)});
        return EChild{inner.cls, a.view};
      }
      auto value = g.uniform_constant(b.cls);
      if (!value || view_of(m, a).has_mask() || view_of(m, b).has_mask()) return std::nullopt;
      EChild c = broadcast_constant(g, *value, g.shape(a.cls), g.dtype(b.cls));
      EChild inner = prim(g, op, {identity(g, a.cls), c});
      return EChild{inner.cls, a.view};
    }));
  }
}

// (reduce:i (reduce:j x)) = the same two reductions in the other order.
Applier swap_reductions(Op op) {
  return [op](const Match& m) -> std::optional<EChild> {
    int i = m.axis("i"), j = m.axis("j");
    int i_x = i < j ? i : i + 1;  // the outer reduction's axis, counted in x
    int j_after = j < i_x ? j : j - 1;
    EChild inner = prim(m.egraph, op, {m.var("x")}, i_x);
    return prim(m.egraph, op, {inner}, j_after);
  };
}

// (reduce:j (reduce:j x)) reduces x's adjacent axes j, j+1: one reduction over both.
Applier merge_axes(Op op) {
  return [op](const Match& m) -> std::optional<EChild> {
    int i = m.axis("i"), j = m.axis("j");
    if (i != j) return std::nullopt;
    EChild x = m.var("x");
    Shape s = view_of(m, x).shape();
    Shape merged = without(s, j + 1);
    merged[static_cast<size_t>(j)] = simplify(s[static_cast<size_t>(j)] * s[static_cast<size_t>(j) + 1]);
    EChild flat = m.egraph.edge(x.cls, view_of(m, x).reshape(merged));
    return prim(m.egraph, op, {flat}, j);
  };
}

// (reduce:k x) over n = c·(n/c) elements: reduce chunks of c, then combine the n/c partial results.
Applier split_axis(Op op) {
  return [op](const Match& m) -> std::optional<EChild> {
    int k = m.axis("k");
    EChild x = m.var("x");
    Shape s = view_of(m, x).shape();
    const Expr& extent = s[static_cast<size_t>(k)];
    if (!extent.is_const() || extent.value() < kSplitMinExtent) return std::nullopt;
    int64_t n = extent.value(), chunk = 1;
    for (int64_t c = 2; c * c <= n; c *= 2) {
      if (n % c == 0) chunk = c;
    }
    if (chunk < 2) return std::nullopt;
    Shape split = s;
    split[static_cast<size_t>(k)] = Expr(n / chunk);
    split.insert(split.begin() + k + 1, Expr(chunk));
    EChild chunks = m.egraph.edge(x.cls, view_of(m, x).reshape(split));
    EChild partial = prim(m.egraph, op, {chunks}, k + 1);
    return prim(m.egraph, op, {partial}, k);
  };
}

// (reduce:k (combine a b)) with `a` the same along k: (combine a' (reduce:k b)).
Applier factor_out(Op reduce, Op combine) {
  return [reduce, combine](const Match& m) -> std::optional<EChild> {
    int k = m.axis("k");
    EChild a = m.var("a"), b = m.var("b");
    const View& va = view_of(m, a);
    if (!constant_along(va, k)) return std::nullopt;
    if (reduce == Op::MaxReduce && !proven_nonempty(va.shape()[static_cast<size_t>(k)])) return std::nullopt;
    EChild reduced = prim(m.egraph, reduce, {b}, k);
    return prim(m.egraph, combine, {m.egraph.edge(a.cls, drop_axis(va, k)), reduced});
  };
}

// (combine a (reduce:k b)) = (reduce:k (combine a-broadcast-along-k b)).
Applier factor_in(Op reduce, Op combine) {
  return [reduce, combine](const Match& m) -> std::optional<EChild> {
    int k = m.axis("k");
    EChild a = m.var("a"), b = m.var("b");
    const Expr extent = view_of(m, b).shape()[static_cast<size_t>(k)];
    if (reduce == Op::MaxReduce && !proven_nonempty(extent)) return std::nullopt;
    EChild wide = m.egraph.edge(a.cls, insert_axis(view_of(m, a), k, extent));
    return prim(m.egraph, reduce, {prim(m.egraph, combine, {wide, b})}, k);
  };
}

void reduction_rules(std::vector<Rule>& rules) {
  rules.push_back(rule("sum-swap", "(sum:i (sum:j ?x))", swap_reductions(Op::SumReduce)));
  rules.push_back(rule("max-swap", "(max:i (max:j ?x))", swap_reductions(Op::MaxReduce)));
  rules.push_back(rule("sum-merge-axes", "(sum:i (sum:j ?x))", merge_axes(Op::SumReduce)));
  rules.push_back(rule("max-merge-axes", "(max:i (max:j ?x))", merge_axes(Op::MaxReduce)));
  rules.push_back(rule("sum-split", "(sum:k ?x)", split_axis(Op::SumReduce)));
  rules.push_back(rule("max-split", "(max:k ?x)", split_axis(Op::MaxReduce)));
  rules.push_back(rule("sum-of-add", "(sum:k (add ?a ?b))", "(add (sum:k ?a) (sum:k ?b))"));
  rules.push_back(rule("add-of-sums", "(add (sum:k ?a) (sum:k ?b))", "(sum:k (add ?a ?b))"));
  rules.push_back(rule("sum-factor-out", "(sum:k (mul ?a ?b))", factor_out(Op::SumReduce, Op::Mul)));
  rules.push_back(rule("max-factor-out", "(max:k (add ?a ?b))", factor_out(Op::MaxReduce, Op::Add)));
  rules.push_back(rule("sum-factor-in", "(mul ?a (sum:k ?b))", factor_in(Op::SumReduce, Op::Mul)));
  rules.push_back(rule("max-factor-in", "(add ?a (max:k ?b))", factor_in(Op::MaxReduce, Op::Add)));
  rules.push_back(rule("max-exp2", "(max:k (exp2 ?x))", "(exp2 (max:k ?x))").when([](const Match& m) {
    return proven_nonempty(view_of(m, m.var("x")).shape()[static_cast<size_t>(m.axis("k"))]);
  }));
}

}  // namespace

std::vector<Rule> default_rules() {
  std::vector<Rule> rules;
  algebra_rules(rules);
  exp2_log2_rules(rules);
  fold_rules(rules);
  view_rules(rules);
  reduction_rules(rules);
  return rules;
}

}  // namespace lumen::egraph
