// The space of schedules lumen searches: a kernel's schedule described by a
// few knobs (register tile, packing, loop order, SIMD width, reduction lanes,
// unrolling, which loop runs in parallel) that map to an action list. The
// heuristic picks one point; the search walks its neighbours. Any point that
// maps to illegal actions raises lumen::Error and is pruned.
#pragma once

#include <string>
#include <vector>

#include "lumen/core/graph.h"
#include "lumen/kernel/heuristic.h"
#include "lumen/kernel/schedule.h"

namespace lumen::kernel {

// Part of every tuning-cache key: bump it when the space gains knobs or code
// generation changes enough that winners found before should be searched again.
constexpr int kScheduleSpaceVersion = 23;  // 21: int8 byte-dot kernels; 22: vector rows, masked short rows;
                                            // 23: independent vector rows, one accumulator a vector of reduce lanes

// Reduce lanes may span up to this many SIMD vectors (a period of packed quants).
constexpr int64_t kMaxLaneChunks = 4;

// Whether a row the SIMD width does not divide still runs in SIMD lanes, its
// last (or only) vector masked past the row's end: a dynamic row, or a static
// one longer than a quarter of the width (mobilenet_v3_small's 7- and 14-wide
// maps: a masked vector of 7 does in one step what 7 scalar steps do).
inline bool masked_row_is_simd(const Expr& row, int64_t width) { return !row.is_const() || 4 * row.value() > width; }

// What the space needs to know about one kernel, computed once.
struct KernelFacts {
  NodeId node = -1;
  Shape shape;
  int lanes = 16;
  int threads = 2;
  bool gpu = false;           // a GPU target: work-group knobs join the space
  bool f32 = true;
  NodeId contraction = -1;    // the sum of a product computed at the output points, if any
  int pack_operand = -1;      // the contraction operand worth packing, if any
  bool one_sum_axis = true;   // the contraction sums one axis of its product (nested sums merged sum several:
                              // a pack is then made before the kernel, not inline)
  bool tileable = false;      // contraction that can take a register tile
  bool tile_overhangs = false;  // ... whose last tile of columns overhangs N (static, not a multiple of the lanes)
  int row_dim = -1;           // a tile's rows: the innermost dim before the last whose extent is not 1 (a
                              // [197, 1, 2304] projection tiles its 197 rows), else rank - 2
  bool vector_last = false;   // the last output dim can be SIMD (static, divisible, unit stride or 2-4)
  bool unit_reduce = false;   // some reduction walks memory with unit stride
  bool byte_groups = false;   // some reduction reads bytes four at a time (int8 dot products)
  bool byte_rows = false;     // the last dim reads bytes four at a time: int8 dot products with rows in SIMD lanes
  std::vector<int64_t> reduce_splits;  // n where a load index takes r / n or r % n of a reduction r (n divides it)
  int64_t split_lanes = 0;    // such an n, above a quarter vector and at most one, after which every load walks the
                              // split's inner part with stride 0 or 1 (a mean over 14 x 14 positions of rows 18
                              // apart): SIMD reduce lanes over the inner part, its last lanes masked
  int64_t lane_period = 0;    // digits (r / d) % m of a reduction r repeat every lane_period (kMaxLaneChunks
                              // vectors at most): reduce lanes that span it make them constants; 0: none
  int shared_row_dim = -1;    // an output dim (not the last, static) whose outputs share every vector the
                              // reduction loads along the last dim (a pointwise conv's output channels); -1: none
  int transposed_dim = -1;    // an output dim (not the last) that some load walks with unit stride while
                              // the last dim's loads stride: the kernel reads through a transpose
  int64_t rfactor_extent = 0;  // the known factor of the outer reduction's extent (what rfactor cuts); 0: none
  int64_t unit_reduce_extent = 0;  // the known factor of the unit-stride reductions' extents (the least); 0: none
  int64_t contraction_extent = 0;  // the known factor of the contraction's reduction (K); 0: none
  bool contraction_static = false;  // ... and K is static (contraction_extent is K itself)
  int64_t l2_bytes = 0;            // the target's L2 per core; 0: unknown
  double numel = 0, work = 0;
  double loads = 0;  // elements the plain kernel loads (a reduction of an input reads many per output)
  bool reads_parameter = false;  // some buffer it reads is a parameter (weights: often a mapped file, small pages)
  bool pair_dot = false;  // a bf16 contraction (both operands bf16 widened to f32, K even) on a target with a
                          // bf16 pair dot product: pair_dot knobs join the space
};

KernelFacts kernel_facts(const Graph& graph, NodeId node, const std::vector<bool>& materialized, const Target& target);
// c when `index` repeats each element over c consecutive values of `lane` (base + lane / c over
// `lanes` values, c = 2, 4 or 8: a nearest upsampling read along its rows); 0 otherwise.
int64_t lane_repeat(const Expr& index, const Expr& lane, int64_t lanes);

struct Knobs {
  int64_t mr = 1;          // register tile rows (unrolled), contractions
  int64_t nr = 0;          // register tile columns (SIMD); 0: no tile
  bool pack = false;       // pack the contraction operand into panels of width nr
  bool pack_inline = false;  // ... inside the kernel, each panel just before it is read
  bool n_outer = true;     // the n tile loop outside the m tile loop
  int64_t m_block = 0;     // tiled, n-outer: blocks of m_block row tiles outside the n tiles (a cache
                           // tile: a block of A stays in L2 while the n panels pass); 0: none
  int64_t vector = 0;      // SIMD width along the last dim for non-tiled kernels; 0: none
  int64_t block = 0;       // transposed reads: the output walked in block x block squares of the last
                           // dim and the transposed one, so the input lines a square reads stay in L1
  int64_t rows = 1;        // non-tiled reductions: last-dim outputs unrolled (several dot products share loads);
                           // with a vector, outputs of the row dim unrolled around it (independent accumulators)
  int64_t reduce_lanes = 1;
  int64_t prefetch = 0;    // row reductions: prefetch this many parallel iterations ahead
  int64_t reduce_unroll = 1;
  int64_t reduce_split = 1;  // reductions run as outer x inner loops of this many (see Action::reduce_split)
  int parallel = 0;        // which loop with >1 iteration runs in parallel (0: the first); -1: none
  int64_t rfactor = 1;     // the outer reduction cut into this many parts, computed in parallel first
  int gpu_reduce = -1;     // GPU: 0 reduce per work item, 1 across a work-group, 2 per item staged, -1 the backend's choice
  int64_t gpu_group = 0;   // GPU: work items per group; 0 the backend's choice
  bool pair_dot = false;   // packed bf16 contraction: k-pairs interleaved, one PairDot (vdpbf16ps) per two k

  bool operator==(const Knobs& o) const;
  std::string to_string() const;
};

Knobs heuristic_knobs(const KernelFacts& facts);
// heuristic_knobs, printed to stderr under LUMEN_DEBUG=schedules.
Knobs traced_heuristic_knobs(const Graph& graph, const KernelFacts& facts);
// The actions for a point; throws Error where the point is illegal.
std::vector<Action> knob_actions(const KernelFacts& facts, const Knobs& knobs);
// Points that differ from `k` in one knob.
std::vector<Knobs> neighbours(const KernelFacts& facts, const Knobs& k);

}  // namespace lumen::kernel
