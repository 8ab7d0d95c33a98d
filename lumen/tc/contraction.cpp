#include "lumen/tc/contraction.h"

#include <algorithm>
#include <set>

#include "lumen/ops/reduce.h"

namespace lumen::tc {

namespace {

void mentioned(const Ast& e, const std::set<std::string>& vars, std::set<std::string>& out) {
  if (e.kind == NodeKind::Name && vars.count(e.text)) out.insert(e.text);
  for (const AstPtr& a : e.args) mentioned(*a, vars, out);
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
  std::vector<IterDim> space = kept;
  space.insert(space.end(), reduced.begin(), reduced.end());
  Tensor body = lower_body(*product(factors), space, scope);
  if (reduced.empty()) return body;
  std::vector<int> axes;
  for (size_t d = kept.size(); d < space.size(); ++d) axes.push_back(static_cast<int>(d));
  return ops::sum(body, axes);
}

}  // namespace

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
