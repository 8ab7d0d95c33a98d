#include "lumen/core/simplify_rules.h"

namespace lumen {

using rewrite::const_wild;
using rewrite::rule;
using rewrite::wild;

const std::vector<rewrite::Rule>& simplifier_rules() {
  static const std::vector<rewrite::Rule> rules = [] {
    auto x = wild(0), y = wild(1), z = wild(2);
    auto c0 = const_wild(3), c1 = const_wild(4);
    return std::vector<rewrite::Rule>{
        // Nested division and modulo by constants.
        rule((x / c0) / c1, x / (c0 * c1), c0 > 0 && c1 > 0),
        rule((x % c0) % c1, x % c1, c1 > 0 && eq(c0 % c1, 0)),
        rule((x % c0) / c1, (x / c1) % (c0 / c1), c0 > 0 && c1 > 0 && eq(c0 % c1, 0)),

        // min / max: decided by proof, constants gathered.
        rule(min(x, y), x, x <= y),
        rule(min(x, y), y, y <= x),
        rule(max(x, y), x, y <= x),
        rule(max(x, y), y, x <= y),
        rule(min(min(x, c0), c1), min(x, min(c0, c1))),
        rule(max(max(x, c0), c1), max(x, max(c0, c1))),
        rule(min(x + c0, c1), min(x, c1 - c0) + c0),
        rule(max(x + c0, c1), max(x, c1 - c0) + c0),

        // Comparisons: decided by proof, constants moved to one side.
        rule(x < y, 1, x < y),
        rule(x < y, 0, y <= x),
        rule(x + c0 < c1, x < c1 - c0),
        rule(c0 < x + c1, c0 - c1 < x),
        rule(x * c0 < c1, x < (c1 + c0 - 1) / c0, c0 > 0),
        rule(c1 < x * c0, c1 / c0 < x, c0 > 0),
        rule(eq(x, y), 1, eq(x, y)),
        rule(eq(x, y), 0, x < y || y < x),
        rule(eq(x + c0, c1), eq(x, c1 - c0)),

        // Logic.
        rule(!(x < y), y < x + 1),
        rule(!!x, x, x >= 0 && x <= 1),
        rule(x && y, x, y && x >= 0 && x <= 1),
        rule(x && y, 0, !x || !y),
        rule(x || y, 1, x || y),
        rule(x || y, x, !y && x >= 0 && x <= 1),

        // Select.
        rule(select(x, y, z), y, x),
        rule(select(x, y, z), z, !x),
    };
  }();
  return rules;
}

}  // namespace lumen
