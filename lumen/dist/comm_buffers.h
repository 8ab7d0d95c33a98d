// Host-buffer layouts around collectives: a split tensor's chunk, and the
// whole tensor rebuilt from an all-gather (which concatenates ranks' chunks
// along the flat outermost dim, not along the split axis).
#pragma once

#include <string>
#include <vector>

#include "lumen/core/array.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/view.h"

namespace lumen::dist {

// Chunk `index` of `parts` along `axis` of `whole` (a copy); `what` names it in errors.
Array chunk_of(const Array& whole, int axis, int parts, int index, const std::string& what);
// `gathered` holds `parts` chunks one after another, each of shape `chunk`;
// returns the whole tensor, chunks placed along `axis`.
Array assemble_chunks(const Array& gathered, const std::vector<int64_t>& chunk, int axis, int parts);
// A shape with its dynamic dims bound.
std::vector<int64_t> concrete_shape(const Shape& shape, const Bindings& bindings);

}  // namespace lumen::dist
