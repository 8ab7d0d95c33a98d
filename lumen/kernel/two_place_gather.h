// A gather whose index is `position + cond·offset` (position and offset
// integer Exprs of the loop variables, cond a boolean value) reads one of two
// places known without the data: it lowers to a select of two plain reads
// instead of a data-dependent one. `where(c, a, b)` is such a gather from the
// stacked pair [b, a] (ops/elementwise.cpp), so masks written with `where`
// become selects the backends vectorise, and the index no longer hides which
// elements are read.
#pragma once

#include <optional>

#include "lumen/kernel/ir.h"

namespace lumen::kernel {

struct TwoPlaceIndex {
  Value cond;       // Bool: reads position + offset where true, position where false
  Expr position;
  Expr offset;
};

// The two places a gather index value `index` reads, when it has that form
// and both places provably lie in [0, size). Nothing otherwise.
std::optional<TwoPlaceIndex> two_place_index(const Value& index, const Expr& size);

}  // namespace lumen::kernel
