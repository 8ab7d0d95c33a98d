// The loop levels lowering builds a kernel in (lower.cpp): each level is a
// loop (or the kernel's root) with its statements, what it defines, and the
// values computed at it, memoised by node, coordinates and guard, so a value
// is computed once per point of the loops it depends on.
#pragma once

#include <map>
#include <vector>

#include "lumen/core/graph.h"
#include "lumen/kernel/affine_range.h"
#include "lumen/kernel/ir.h"

namespace lumen::kernel {

// Memo key: a node at given coordinates under a guard.
struct Key {
  NodeId node;
  std::vector<const ExprNode*> coords;
  const ExprNode* guard;
  bool operator<(const Key& o) const {
    if (node != o.node) return node < o.node;
    if (guard != o.guard) return guard < o.guard;
    return coords < o.coords;
  }
};

// One loop level while building: its statements and what it defines.
struct Level {
  Expr var;  // undefined for the kernel's root
  Expr extent;
  Expr counted;  // the extent counted for evaluations when `extent` is restricted (known_region.h)
  LoopKind kind = LoopKind::Serial;
  int unroll_hint = 1;
  Block block;
  std::vector<Expr> defines;  // loop variable and data-dependent index variables bound here
  // Coordinates that stand for this loop and the ones outside it along the same
  // dim while the kernel is built (an overhanging dynamic dim's clamped
  // coordinate, over the dim's extent): quantified wherever `var` is.
  std::vector<LoopVar> stand_ins;
  std::vector<int> accs;      // accumulators initialised here
  std::map<Key, Value> reduce_memo;
  std::map<Key, Value> value_memo;  // any node at given coordinates: computed once, reused below
  std::map<Key, Expr> gather_memo;
};

using Context = std::vector<Level*>;

inline std::vector<const ExprNode*> key_of(const std::vector<Expr>& coords) {
  std::vector<const ExprNode*> k;
  for (const Expr& e : coords) k.push_back(e.get());
  return k;
}

}  // namespace lumen::kernel
