#include "lumen/egraph/rule.h"

#include "lumen/core/error.h"

namespace lumen::egraph {

EChild Match::var(const std::string& name) const {
  for (size_t i = 0; i < scope.vars.size(); ++i) {
    if (scope.vars[i] == name && subst.vars[i]) return *subst.vars[i];
  }
  fail("rule: the match binds no variable ?", name);
}

int Match::axis(const std::string& name) const {
  for (size_t i = 0; i < scope.axes.size(); ++i) {
    if (scope.axes[i] == name) return subst.axes[i];
  }
  fail("rule: the match binds no axis :", name);
}

Rule rule(const std::string& name, const std::string& lhs, const std::string& rhs) {
  Rule r;
  r.name = name;
  r.lhs = parse_pattern(lhs, r.scope, true);
  r.rhs = parse_pattern(rhs, r.scope, false);
  return r;
}

Rule rule(const std::string& name, const std::string& lhs, Applier apply) {
  Rule r;
  r.name = name;
  r.lhs = parse_pattern(lhs, r.scope, true);
  r.apply = std::move(apply);
  return r;
}

bool apply_rule(EGraph& egraph, const Rule& rule, const Subst& subst, ClassId root) {
  root = egraph.find(root);
  Match m{egraph, rule.scope, subst, root};
  if (rule.condition && !rule.condition(m)) return false;
  std::optional<EChild> result;
  try {
    if (rule.rhs) {
      result = instantiate(egraph, *rule.rhs, subst, egraph.shape(root), egraph.dtype(root));
    } else {
      result = rule.apply(m);
    }
  } catch (const Error&) {
    return false;  // an ill-formed right side for this match (e.g. operand shapes differ): not an equality
  }
  if (!result) return false;
  if (!same_shape(egraph.shape(*result), egraph.shape(root)) || egraph.dtype(result->cls) != egraph.dtype(root)) {
    return false;
  }
  return egraph.merge(root, egraph.add_view(*result));
}

}  // namespace lumen::egraph
