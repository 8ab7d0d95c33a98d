// Rule — a rewrite written as data: a name, a left pattern, and either a
// right pattern or an applier (C++ for what patterns cannot say: axis
// arithmetic, view surgery, constant folding), plus an optional condition.
//
//   rule("mul-comm", "(mul ?a ?b)", "(mul ?b ?a)")
//   rule("sum-factor-out", "(sum:k (mul ?a ?b))", factor_out_of_reduce).when(constant_along_k)
//
// A rule asserts "left == right" for every match; saturate() applies it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lumen/egraph/pattern.h"

namespace lumen::egraph {

// What a match binds, with helpers for appliers and conditions.
struct Match {
  EGraph& egraph;
  const PatternScope& scope;
  const Subst& subst;
  ClassId root;  // the class the left side matched
  EChild var(const std::string& name) const;
  int axis(const std::string& name) const;
};

using Condition = std::function<bool(const Match&)>;
// Returns an operand equal to the matched class, or nothing to skip this match.
using Applier = std::function<std::optional<EChild>(const Match&)>;

struct Rule {
  std::string name;
  PatternScope scope;
  Pattern lhs;
  std::optional<Pattern> rhs;
  Applier apply;
  Condition condition;

  Rule& when(Condition c) {
    condition = std::move(c);
    return *this;
  }
};

Rule rule(const std::string& name, const std::string& lhs, const std::string& rhs);
Rule rule(const std::string& name, const std::string& lhs, Applier apply);

// Applies `rule` to one match: builds the right side and merges it with the
// matched class. Returns true if that changed the e-graph's equivalences.
// A right side that would be ill-formed (shapes) skips the match.
bool apply_rule(EGraph& egraph, const Rule& rule, const Subst& subst, ClassId root);

}  // namespace lumen::egraph
