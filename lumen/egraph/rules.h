// The general rewrite rules lumen searches with. None names a model or a
// composite op (attention, softmax, norms): each is an identity of the
// primitives that holds for every shape, and each has a randomized
// equivalence test (tests/egraph/rules_test.cpp).
//
//   algebra      commutativity, associativity, distributivity and factoring of
//                add and mul; x + x = 2x; add 0 / mul 1
//   exp2/log2    exp2(a+b) = exp2(a)·exp2(b) (both ways), log2(exp2 x) = x,
//                1/exp2(x) = exp2(-x), 1/(a·b) = (1/a)(1/b), 1/(1/x) = x
//   constants    folding of float unary/binary ops on uniform constants
//   views        an elementwise op on operands read through one view is the
//                op on the unviewed operands, viewed (fewer ALU ops under a
//                broadcast)
//   reductions   reorder two reductions, merge two adjacent reduced axes into
//                one and split one into chunks then combine (sum of sums, max
//                of maxes), sum/max of a sum split into sums, a factor
//                constant along the reduced axis moved out of (or into) a sum
//                (mul) or max (add), max commutes with exp2 (monotone)
#pragma once

#include <vector>

#include "lumen/egraph/rule.h"

namespace lumen::egraph {

// Every rule, in a stable order.
std::vector<Rule> default_rules();

// A reduction axis is split into chunks of this size when it has at least
// kSplitMinExtent elements and the chunk divides it: the largest power of two
// whose square is at most the extent.
inline constexpr int64_t kSplitMinExtent = 256;

}  // namespace lumen::egraph
