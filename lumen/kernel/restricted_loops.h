// Restricted loops: lowering runs a reduction over the part of its axis where
// its term can differ from the identity (known_region.h), and skips it where
// no output point the loop serves needs it (the kernel's output is a known
// constant there). Ranges become whole blocks of the loop's step (SIMD lanes,
// split parts): the extra terms a block includes are the identity, so the
// result is the same.
#pragma once

#include <optional>
#include <vector>

#include "lumen/kernel/affine_range.h"
#include "lumen/kernel/ir.h"
#include "lumen/kernel/known_region.h"

namespace lumen::kernel {

// Reductions over at most this many terms (a static axis: a pooling or conv window) run whole.
// Restricted, they would skip at most a few terms per output, at the image's borders, and the
// loop's start, which then depends on the output point, makes the index through a window's
// views (r / KW, r % KW) something the simplifier cannot bound: a division per term (a 5 x 5
// average pool, padded: 84 ms -> 3.2 ms at 2 threads).
inline constexpr int64_t kShortestRestricted = 16;

struct AxisRange {
  Expr lo, hi;             // [lo, hi) in elements; undefined: the whole axis
  Expr needed = Expr(1);   // the loop runs only where this holds
};

// Reduction `n` at output `coords`: its range for all `lanes` together, and
// whether any point of `target_live` (the kernel's output outside its known
// constant; undefined: everywhere) over the `varying` loops needs it. A cut
// (rfactor) reduction keeps its whole axis.
AxisRange reduction_range(KnownRegions& known, const Graph& graph, NodeId n, const std::vector<Expr>& coords,
                          const std::vector<LoopVar>& lanes, const std::vector<LoopVar>& varying,
                          const Expr& target_live, bool cut);

// An output loop restricted to the blocks where the output is not its known
// constant; the other blocks store the constant in sibling loops.
struct LaneLoop {
  Expr var, extent;
  LoopKind kind;
};
struct RestrictedOutput {
  size_t level, dim;         // the loop's level in the nest, the output dim it walks
  int64_t step;              // elements per iteration (its lane loop's extent)
  Expr full, first, count;   // the loop's extent, its first block and block count
  std::vector<LaneLoop> lanes;  // the lane loops inside it, to open again for the constant
};

// Where along dim d of its output kernel `target` at `coords` may differ
// from its known constant, for all `lanes` together; nothing when it may
// anywhere. (The same probe as reductions use: a sum over the same range
// gets the same loop, which reuse.h pairs with the output loop.)
std::optional<VarRange> output_range(KnownRegions& known, NodeId target, const Shape& shape, std::vector<Expr> coords,
                                     size_t d, const std::vector<LoopVar>& lanes);

// `live` for some value of every var in `vars`.
Expr for_some(Expr live, const std::vector<LoopVar>& vars);

// The first block of u elements the range covers, and how many blocks
// (`full` when unrestricted; 0 where not needed).
Expr first_block(const AxisRange& range, int64_t u);
Expr block_count(const AxisRange& range, int64_t u, const Expr& full);

}  // namespace lumen::kernel
