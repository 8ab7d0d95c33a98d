// Schedule — how a kernel's output loops are arranged, as a replayable list
// of actions applied to the default nest (one serial loop per output dim, in
// order). Every action is legal or raises lumen::Error, so a search can try
// action lists blindly and prune the illegal ones. Actions never change what
// is computed, only the loop structure, so any legal schedule is correct.
//
//   split(loop, factor)     loop of extent E -> outer E/factor, inner factor
//                           (factor divides E; or the first split of a static
//                           dim: outer ceil(E/factor), the overhang clamped)
//   reorder(loop, to)       move a loop to another position
//   kind(loop, k)           serial, parallel (the outermost loop only), unroll,
//                           vector (innermost lane loops)
//   reduce_lanes(n)         every reduction keeps n partial accumulators in a
//                           vector (needs n to divide the reduced extent)
//   reduce_unroll(n)        every reduction loop is unrolled n times
//   reduce_split(n)         every reduction loop whose extent n divides runs as
//                           an outer loop and an inner loop of n, unrolled
//                           whole (an index r/n, r%n becomes two loop
//                           variables: convolution windows over C·KH·KW)
//   pack(operand, nr)       for a contraction (a sum of a product), copy that
//                           operand into panels [.., N/nr, K, nr] first, so the
//                           reduction streams contiguous memory
//   pack_inline(operand)    that operand's pack is made inside the kernel, one
//                           panel at a time just before the loops that read it
//                           (by the thread that reads it, so it is still in
//                           its cache), instead of by a kernel run first
//   prefetch(d)             reductions prefetch their rows d iterations of
//                           the parallel loop ahead (DRAM reads overlap work)
//   rfactor(p)              the kernel's outer reduction (the one its output
//                           points take, possibly under an elementwise
//                           epilogue) is cut into p parts computed in
//                           parallel into partial results by a kernel run
//                           first; the kernel combines the p partials. For
//                           outputs too few to share among threads (a sum of
//                           everything, a norm of a few long rows)
//   pair_dot(operand)       a bf16 contraction (both operands bf16 values
//                           widened to f32) whose operand `operand` is packed
//                           (pack first, made before the kernel): the pack
//                           holds bf16 k-pairs interleaved ([.., N/nr, K/2,
//                           nr, 2]) and the reduction takes two k per step as
//                           one PairDot (the CPU writes vdpbf16ps). K even
//   gpu(mode, size)         GPU backends only (lumen/backend/gpu): mode 0
//                           reduces inside each work item, 1 across a
//                           work-group (local memory, barriers), 2 inside
//                           each work item with shared operands staged in
//                           local memory (blocks of points), -1 lets the
//                           backend pick; size work items per group (a power
//                           of two in [32, 1024]; 0: the backend's). The CPU
//                           backend ignores it
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lumen/core/expr.h"
#include "lumen/core/view.h"
#include "lumen/kernel/ir.h"

namespace lumen::kernel {

// reduce_split(n) takes n in [2, kMaxReduceSplit] (its inner loop is unrolled whole).
inline constexpr int64_t kMaxReduceSplit = 64;
// With reduce lanes, a split of n between a quarter vector and a vector runs its inner part in
// the lanes, those past n masked (a mean over 14 x 14 positions stored in rows of 18).
inline bool lanes_over_split(int64_t n, int64_t lanes) { return 4 * n > lanes && n <= lanes; }
// rfactor(p) takes p in [2, kMaxRfactor].
inline constexpr int64_t kMaxRfactor = 256;

enum class ActionKind : uint8_t { Split, Reorder, Kind, ReduceLanes, ReduceUnroll, ReduceSplit, Pack, PackInline, Prefetch, Rfactor, Gpu, PairDot };

struct Action {
  ActionKind kind;
  int loop = 0;       // Split, Reorder, Kind
  int64_t value = 0;  // factor, target position, LoopKind, lanes, unroll

  static Action split(int loop, int64_t factor) { return {ActionKind::Split, loop, factor}; }
  static Action reorder(int loop, int to) { return {ActionKind::Reorder, loop, to}; }
  static Action set_kind(int loop, LoopKind k) { return {ActionKind::Kind, loop, static_cast<int64_t>(k)}; }
  static Action reduce_lanes(int64_t n) { return {ActionKind::ReduceLanes, 0, n}; }
  static Action reduce_unroll(int64_t n) { return {ActionKind::ReduceUnroll, 0, n}; }
  static Action reduce_split(int64_t n) { return {ActionKind::ReduceSplit, 0, n}; }
  static Action pack(int operand, int64_t panel) { return {ActionKind::Pack, operand, panel}; }
  static Action pack_inline(int operand) { return {ActionKind::PackInline, operand, 0}; }
  static Action prefetch(int64_t rows) { return {ActionKind::Prefetch, 0, rows}; }
  static Action rfactor(int64_t parts) { return {ActionKind::Rfactor, 0, parts}; }
  static Action gpu(int mode, int64_t group_size) { return {ActionKind::Gpu, mode, group_size}; }
  static Action pair_dot(int operand) { return {ActionKind::PairDot, operand, 0}; }
  bool operator==(const Action& o) const { return kind == o.kind && loop == o.loop && value == o.value; }
};

std::string to_string(const Action& a);
std::string to_string(const std::vector<Action>& actions);
// Parses what to_string(actions) wrote; throws Error on malformed text.
std::vector<Action> parse_actions(const std::string& text);

// One output loop after scheduling.
struct LoopDef {
  int dim;        // the output dim it iterates
  Expr extent;
  int64_t step;   // coordinate contribution per iteration (product of inner splits of the dim)
  LoopKind kind;
};

class Schedule {
 public:
  // The default nest for an output of `shape`.
  explicit Schedule(const Shape& shape);
  // Applies actions in order; throws Error for an illegal one.
  static Schedule from_actions(const Shape& shape, const std::vector<Action>& actions);

  void apply(const Action& a);
  const std::vector<LoopDef>& loops() const { return loops_; }
  const std::vector<Action>& actions() const { return actions_; }
  const Shape& shape() const { return shape_; }
  int64_t reduce_lanes() const { return reduce_lanes_; }
  int64_t reduce_unroll() const { return reduce_unroll_; }
  int64_t reduce_split() const { return reduce_split_; }
  int64_t prefetch() const { return prefetch_; }
  int64_t rfactor() const { return rfactor_; }  // 1: the reduction is not cut
  int gpu_reduce() const { return gpu_reduce_; }        // -1: the backend's choice
  int64_t gpu_group() const { return gpu_group_; }      // 0: the backend's choice
  // (operand index, panel width) pairs to pack before the kernel runs.
  const std::vector<std::pair<int, int64_t>>& packs() const { return packs_; }
  // Whether operand's pack is made inside the kernel (pack_inline).
  bool pack_inline(int operand) const;
  // The packed operand of a pair_dot schedule; -1: none.
  int pair_dot() const { return pair_dot_; }

 private:
  void check_loop(int loop, const char* action) const;
  void validate_kinds() const;

  Shape shape_;
  std::vector<LoopDef> loops_;
  std::vector<Action> actions_;
  int64_t reduce_lanes_ = 1;
  int64_t reduce_unroll_ = 1;
  int64_t reduce_split_ = 1;
  int64_t prefetch_ = 0;
  int64_t rfactor_ = 1;
  int gpu_reduce_ = -1;
  int64_t gpu_group_ = 0;
  std::vector<std::pair<int, int64_t>> packs_;
  std::vector<int> inline_packs_;
  int pair_dot_ = -1;
};

}  // namespace lumen::kernel
