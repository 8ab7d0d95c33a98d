// Pattern — the s-expression language rewrite rules are written in:
//
//   (mul ?a (add ?b ?c))      ?a ?b ?c match any operand (a class read through a view)
//   (sum:k (mul ?a ?b))       `:k` binds a reduction's axis; the right side may reuse it
//   (add ?a 0)                a number matches a class holding that constant everywhere
//
// Op names: add mul mod lt exp2 log2 sin sqrt recip cast contiguous sum max gather.
// A nested operator matches through its operand's view when the view can be
// pushed inside it (elementwise ops; padded views only for ops that keep 0 at 0).
// On the right side a number becomes a constant broadcast to its sibling's
// (or the whole pattern's) shape and dtype.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lumen/egraph/egraph.h"

namespace lumen::egraph {

struct PatternNode {
  enum class Kind : uint8_t { Var, Number, Op } kind = Kind::Var;
  int var = -1;       // Var: slot
  double number = 0;  // Number
  Op op = Op::Add;    // Op
  int axis_var = -1;  // Op (reductions): slot of the axis variable, -1 if none
  std::vector<PatternNode> children;
};

// A parsed pattern; variable names map to slots shared by the rule's sides.
struct Pattern {
  PatternNode root;
  std::string text;
};

// Variable and axis-variable names of one rule (both sides share them).
struct PatternScope {
  std::vector<std::string> vars, axes;
  int var(const std::string& name, bool may_add);
  int axis(const std::string& name, bool may_add);
};

// Parses `text`; names new on the left are added to `scope`, on the right
// (may_add false) they must already exist. Raises a lumen::Error naming the
// position on bad syntax.
Pattern parse_pattern(const std::string& text, PatternScope& scope, bool may_add);

// One way a pattern matched: an operand per variable, an axis per axis variable.
struct Subst {
  std::vector<std::optional<EChild>> vars;
  std::vector<int> axes;
};

// Every match of `pattern` at class `cls` (`identity` is the identity view of
// its shape). Stops after `limit` matches.
void match(EGraph& egraph, const Pattern& pattern, ClassId cls, ViewId identity, const PatternScope& scope,
           std::vector<Subst>& out, size_t limit);

// Builds the pattern's right side into the e-graph; `shape`/`dtype` are the
// matched class's (for a bare number). Raises if the result is ill-formed.
EChild instantiate(EGraph& egraph, const Pattern& pattern, const Subst& subst, const Shape& shape, DType dtype);

// A constant `value` of `dtype` broadcast to `shape`, as an operand.
EChild broadcast_constant(EGraph& egraph, double value, const Shape& shape, DType dtype);

}  // namespace lumen::egraph
