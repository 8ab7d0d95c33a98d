// ENode — one operation in an e-graph: a primitive op (or a free view) whose
// operands are e-classes read through Views, exactly like a Graph node's
// input edges. Views are interned in a ViewTable so an e-node hashes and
// compares in O(operands).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "lumen/core/dtype.h"
#include "lumen/core/expr.h"
#include "lumen/core/op.h"
#include "lumen/core/view.h"

namespace lumen::egraph {

using ClassId = int32_t;
using ViewId = int32_t;

// An operand: the value of e-class `cls` read through view `view`.
struct EChild {
  ClassId cls = -1;
  ViewId view = -1;
  bool operator==(const EChild& o) const { return cls == o.cls && view == o.view; }
};

enum class ENodeKind : uint8_t {
  Prim,  // a primitive op with the Graph node's attributes
  View,  // children[0] read through its view, as a contiguous value (free: it is an edge)
};

struct ENode {
  ENodeKind kind = ENodeKind::Prim;
  Op op = Op::Constant;
  DType dtype = DType::F32;   // Cast's target; a leaf's dtype
  int axis = -1;              // reductions, Gather
  double number = 0;          // Constant without a pattern
  Expr pattern;               // Constant: integer Expr of the element index
  int leaf = -1;              // Input: index into the e-graph's leaf table; Constant: its interned shape
  std::vector<EChild> children;

  bool operator==(const ENode& o) const;
};

struct ENodeHash {
  size_t operator()(const ENode& n) const;
};

// Interns Views: equal views get equal ids. Id 0.. in insertion order.
class ViewTable {
 public:
  ViewId intern(const View& view);
  const View& get(ViewId id) const { return views_[static_cast<size_t>(id)]; }
  // True if the view reads its base as is (same shape, row-major, no mask).
  bool is_identity(ViewId id) const { return identity_[static_cast<size_t>(id)]; }
  size_t size() const { return views_.size(); }

 private:
  std::vector<View> views_;
  std::vector<bool> identity_;
  std::unordered_map<std::string, ViewId> ids_;
};

// The key a view is interned by (its base shape and layers).
std::string view_key(const View& view);
bool same_shape(const Shape& a, const Shape& b);

}  // namespace lumen::egraph
