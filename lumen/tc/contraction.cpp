#include "lumen/tc/contraction.h"

#include <algorithm>
#include <optional>
#include <set>

#include "lumen/ops/elementwise.h"
#include "lumen/ops/reduce.h"
#include "lumen/tc/diagnostic.h"

namespace lumen::tc {

namespace {

void mentioned(const Ast& e, const std::set<std::string>& vars, std::set<std::string>& out) {
  if (e.kind == NodeKind::Name && vars.count(e.text)) out.insert(e.text);
  for (const AstPtr& a : e.args) mentioned(*a, vars, out);
}

int64_t extent(const std::vector<IterDim>& dims) {
  int64_t n = 1;
  for (const IterDim& d : dims) n *= d.range.hi - d.range.lo;
  return n;
}

double points(const std::vector<IterDim>& dims) {
  double n = 1;
  for (const IterDim& d : dims) n *= static_cast<double>(d.range.hi - d.range.lo);
  return n;
}

AstPtr synthetic(NodeKind kind, const Pos& pos, std::string text, std::vector<AstPtr> args, double number = 0) {
  auto n = std::make_shared<Ast>();
  n->kind = kind;
  n->pos = pos;
  n->span = pos;
  n->text = std::move(text);
  n->args = std::move(args);
  n->number = number;
  n->integer = true;
  return n;
}

AstPtr product(const std::vector<AstPtr>& factors) {
  AstPtr p = factors[0];
  for (size_t i = 1; i < factors.size(); ++i) {
    p = synthetic(NodeKind::Binary, factors[i]->span, "*", {p, factors[i]});
    std::const_pointer_cast<Ast>(p)->span = join(p->args[0]->span, factors[i]->span);
  }
  return p;
}

// A read of `name` over `dims` (index v - lo for each).
AstPtr read_of(const std::string& name, const std::vector<IterDim>& dims, const Pos& pos) {
  std::vector<AstPtr> index;
  for (const IterDim& d : dims) {
    AstPtr v = synthetic(NodeKind::Name, pos, d.var, {});
    if (d.range.lo != 0) v = synthetic(NodeKind::Binary, pos, "-", {v, synthetic(NodeKind::Number, pos, "", {}, double(d.range.lo))});
    index.push_back(v);
  }
  return synthetic(NodeKind::Access, pos, name, index);
}

Tensor direct(const std::vector<AstPtr>& factors, const std::vector<IterDim>& kept, const std::vector<IterDim>& reduced,
              const Scope& scope) {
  if (std::optional<Tensor> t = two_read_contraction(factors, kept, reduced, scope)) return *t;
  std::vector<IterDim> space = kept;
  space.insert(space.end(), reduced.begin(), reduced.end());
  AstPtr whole = product(factors);
  Tensor body = lower_body(*whole, space, scope);
  if (reduced.empty()) return body;
  if (body.dtype() == DType::Bool) fail_at(scope.source, whole->span, "a sum over bools; cast with int(...) or float(...)");
  std::vector<int> axes;
  for (size_t d = kept.size(); d < space.size(); ++d) axes.push_back(static_cast<int>(d));
  return ops::sum(body, axes);
}

}  // namespace

// Two tensor reads multiplied and summed, in the form the built-in matmul and
// conv take: the kept dims ordered [both, first only, second only] (each
// group flattened to one dim), the summed dims flattened to one last dim K,
// so the compiler sees [B, M, N] x K like a matmul (packed panels, register
// tiles). The second factor's group is the SIMD dim unless only the first's
// is a multiple of the vector width (as conv2d's channels / positions forms).
// Empty when the product is not two float reads of one dtype.
std::optional<Tensor> two_read_contraction(const std::vector<AstPtr>& factors, const std::vector<IterDim>& kept,
                                           const std::vector<IterDim>& reduced, const Scope& scope) {
  if (factors.size() != 2 || reduced.empty()) return std::nullopt;
  std::set<std::string> vars;
  for (const IterDim& d : kept) vars.insert(d.var);
  std::vector<std::set<std::string>> uses(2);
  for (size_t f = 0; f < 2; ++f) {
    if (factors[f]->kind != NodeKind::Access) return std::nullopt;
    mentioned(*factors[f], vars, uses[f]);
  }
  std::vector<IterDim> both, first, second;
  for (const IterDim& d : kept) {
    bool a = uses[0].count(d.var) > 0, b = uses[1].count(d.var) > 0;
    (a == b ? both : a ? first : second).push_back(d);
  }
  if (first.empty() || second.empty()) return std::nullopt;  // not a matrix product (a depthwise conv, a dot)
  constexpr int64_t kLanes = 16;
  if (extent(second) % kLanes != 0 && extent(first) % kLanes == 0) std::swap(first, second);
  std::vector<IterDim> space = both;
  for (const auto& group : {first, second, reduced}) space.insert(space.end(), group.begin(), group.end());
  // One dim per group, except the SIMD group (`second`), whose dims stay
  // apart so its innermost dim reads contiguously without a division.
  Shape flat;
  for (const auto& group : {both, first}) {
    if (!group.empty()) flat.push_back(Expr(extent(group)));
  }
  for (const IterDim& d : second) flat.push_back(Expr(d.range.hi - d.range.lo));
  flat.push_back(Expr(extent(reduced)));
  std::vector<Tensor> operands;
  for (const AstPtr& f : factors) operands.push_back(lower_body(*f, space, scope));
  if (operands[0].dtype() != operands[1].dtype() || !is_float(operands[0].dtype())) return std::nullopt;
  Tensor sum = ops::mul(operands[0].reshape(flat), operands[1].reshape(flat)).sum_reduce(-1);
  // Back to the kept dims in the statement's order.
  Shape grouped;
  for (size_t d = 0; d + reduced.size() < space.size(); ++d) grouped.push_back(Expr(space[d].range.hi - space[d].range.lo));
  std::vector<int> order;
  for (const IterDim& d : kept) {
    for (size_t j = 0; j < grouped.size(); ++j) {
      if (space[j].var == d.var) order.push_back(static_cast<int>(j));
    }
  }
  return sum.reshape(grouped).permute(order);
}

std::vector<AstPtr> product_factors(const AstPtr& e) {
  if (e->kind != NodeKind::Binary || e->text != "*") return {e};
  std::vector<AstPtr> out = product_factors(e->args[0]);
  std::vector<AstPtr> right = product_factors(e->args[1]);
  out.insert(out.end(), right.begin(), right.end());
  return out;
}

Tensor contract(const std::vector<AstPtr>& factors, const std::vector<IterDim>& kept, const std::vector<IterDim>& reduced,
                const Scope& scope) {
  std::set<std::string> all;
  for (const IterDim& d : kept) all.insert(d.var);
  for (const IterDim& d : reduced) all.insert(d.var);
  std::vector<std::set<std::string>> uses(factors.size());
  for (size_t f = 0; f < factors.size(); ++f) mentioned(*factors[f], all, uses[f]);
  double naive = points(kept) * points(reduced);
  for (const IterDim& r : reduced) {
    std::vector<AstPtr> inner, outer;
    std::set<std::string> inner_vars, outer_vars;
    for (size_t f = 0; f < factors.size(); ++f) {
      bool has = uses[f].count(r.var) > 0;
      (has ? inner : outer).push_back(factors[f]);
      (has ? inner_vars : outer_vars).insert(uses[f].begin(), uses[f].end());
    }
    if (outer.empty() || inner.size() < 2) continue;  // nothing to sum ahead of the rest
    std::vector<IterDim> inner_kept, inner_reduced, outer_reduced;
    for (const IterDim& d : kept) {
      if (inner_vars.count(d.var)) inner_kept.push_back(d);
    }
    for (const IterDim& d : reduced) {
      if (!inner_vars.count(d.var)) outer_reduced.push_back(d);
      else if (outer_vars.count(d.var)) inner_kept.push_back(d), outer_reduced.push_back(d);
      else inner_reduced.push_back(d);
    }
    std::vector<IterDim> outer_space = kept;
    outer_space.insert(outer_space.end(), outer_reduced.begin(), outer_reduced.end());
    if (points(inner_kept) * points(inner_reduced) + points(outer_space) >= naive) continue;
    Scope with = scope;
    std::string name = "%partial" + std::to_string(scope.tensors.size());
    with.tensors[name] = contract(inner, inner_kept, inner_reduced, scope);
    outer.push_back(read_of(name, inner_kept, inner.front()->span));
    return contract(outer, kept, outer_reduced, with);
  }
  return direct(factors, kept, reduced, scope);
}

}  // namespace lumen::tc
