// Lowerer: builds one kernel's loop IR (lumen/kernel/lower.h) from its target node, the
// schedule and the nodes already materialised. Internal to lumen/kernel; its members are
// defined by concept: lower.cpp (loops, values, buffers, the output), lower_reduce.cpp
// (reductions, rfactor, pair dots), lower_pack.cpp (packed operands).
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "lumen/kernel/lower.h"
#include "lumen/core/error.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/linear_form.h"
#include "lumen/core/simplify.h"
#include "lumen/kernel/known_region.h"
#include "lumen/kernel/lower_levels.h"
#include "lumen/kernel/packing.h"
#include "lumen/kernel/restricted_loops.h"
#include "lumen/kernel/reuse.h"
#include "lumen/kernel/split_loops.h"
#include "lumen/kernel/two_place_gather.h"

namespace lumen::kernel::lowering {

inline DType accumulator_dtype(DType d) { return d == DType::F16 || d == DType::BF16 ? DType::F32 : d; }

// What a sum or a max starts from.
inline double identity_of(Op op, DType dtype) {
  if (op == Op::SumReduce) return 0;
  if (dtype == DType::I64) return -0x1p63;  // INT64_MIN, exact in double
  return is_float(dtype) ? -INFINITY : dtype == DType::I32 ? INT32_MIN : 0;
}

class Lowerer {
 public:
  Lowerer(const Graph& g, const std::vector<bool>& materialized, const Schedule& schedule, const LowerOptions& options)
      : graph_(g), materialized_(materialized), schedule_(schedule), options_(options), evaluations_(g.size(), 0.0) {}

  LoweredKernel run(NodeId target, const std::string& name);

  // The innermost serial output loop (its lanes inside it along the same
  // dim) restricted to the blocks where the output is not its known constant.
  std::optional<RestrictedOutput> restrict_output(NodeId target, const Shape& shape, std::vector<Expr>& coords, Context& ctx);
  // `coords` inside a branch that runs only where `needed` holds: a loop the predicate bounds to a
  // constant part of its range is seen through a placeholder over that part (simplified there: a
  // padded copy of a permuted view loses its divisions), which becomes the loop variable again in
  // finish().
  std::vector<Expr> narrowed_to(const Expr& needed, std::vector<Expr> coords, Context& ctx);

  // The restricted output loop's other blocks: the known constant, stored.
  void store_outside(const RestrictedOutput& cut, std::vector<Expr> coords, const Value& constant, Context& ctx);

  // Where the output at `coords` is stored (into a state's view, or its own buffer).
  Expr store_index(const std::vector<Expr>& coords) const;

  // rfactor's first kernel: part p of the reduction `node` at every output
  // point, stored at [p, point] in the partials buffer. The parts are the
  // parallel loop; the output loops follow, as the schedule arranges them.
  LoweredKernel run_partials(NodeId node, const std::string& name);

  // Runs `target` as a plain copy: the pack kernel writes operand `edge` of the
  // product into panels. Coordinates of the product come from the panel's.
  LoweredKernel run_pack(const Edge& edge, const Packed& pk, const std::string& name);

 private:
  // The schedule's output loops over `shape`, opened in ctx; returns the
  // output coordinates (sums of loop variables times steps, overhang clamped).
  // `serial`: a parallel loop runs serially (another loop is the parallel one).
  std::vector<Expr> open_output_loops(const Shape& shape, Context& ctx, bool serial);

  LoweredKernel finish(Context& ctx);

  // SIMD lanes go to the innermost reductions: a reduction whose loop holds
  // another's (a mean over batch and positions: positions inside batch) keeps
  // scalar steps, so the inner one, which walks memory in order, gets the
  // lanes. Which reductions hold others is found by lowering once plainly.
  void find_nested_reductions(NodeId target);

  // rfactor(p): the kernel's outer reduction is computed in p parts by a
  // kernel run first (run_partials); this kernel combines them (combine_parts).
  void prepare_rfactor(NodeId target, const std::string& name);

  // The reduction rfactor cut, at `coords`: its parts combined.
  Value combine_parts(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx);

  static Combine combine_of(const Node& reduction) {
    return reduction.op == Op::SumReduce ? Combine::Sum : Combine::Max;
  }

  // A fresh accumulator for `reduction`, initialised at the innermost level of `inner`.
  int start_accumulator(const Node& reduction, Context& inner);

  void prepare_pack(NodeId target, int operand, int64_t nr, const std::string& name);

  // pair_dot(operand): the contraction `reduction` sums a product of two bf16
  // values widened to f32, over an even extent, and its packed operand is
  // made before the kernel (the pair layout has no inline copy).
  void check_pair_dot(const Node& reduction, int operand) const;

  // pack_inline: the panel of `pk` that the output point `coords` reads is
  // copied at the outermost loop level that fixes it, before that level's
  // other work. Each thread must make its own panels (no two threads write
  // one), so the parallel loop must be one of the loops that choose the panel.
  void pack_inline(const Edge& e, const Packed& pk, const std::vector<Expr>& coords, Context& ctx);

  // One element of a pack: operand `e` at the product point of `panel`, stored
  // at `panel` in the packed buffer.
  void copy_to_panel(const Edge& e, const Packed& pk, const std::vector<Expr>& panel, int buffer, Context& ctx);

  Value packed_load(const Edge& e, const Packed& pk, const std::vector<Expr>& coords, const Expr& guard);

  // An uneven split's last tile overhangs its dim: those coordinates are
  // clamped to the last point, which is computed and stored again (same value).
  //
  // A dynamic dim overhangs when its tiles do not divide its known factor.
  // Its coordinate is then a placeholder index over the dim's extent while the
  // kernel is built — so views' index math simplifies as it does for an exact
  // loop (a reshape over past + seq rows) — and becomes the clamped coordinate
  // once the kernel is done (finish). The placeholder belongs to the dim's
  // innermost loop, where what depends on the coordinate is computed.
  void clamp_overhang(const Shape& shape, std::vector<Expr>& coords, const std::vector<Level*>& innermost);

  Level* open(const Expr& var, const Expr& extent, LoopKind kind, int unroll_hint = 1);

  // Closes the levels of ctx beyond `keep`, appending each loop to its parent.
  void close(Context& ctx, size_t keep);

  // The kernel's buffer for node n (or scratch), added at first use; `output`
  // marks it written (a buffer first read, then written, becomes an output).
  int buffer_for(NodeId n, bool output = false);

  double multiplicity(const Context& ctx) const;

  double assumed(const Expr& e) const;

  // The deepest level of ctx that defines any of `vars` or initialises any of `accs`.
  size_t level_of(const Context& ctx, const std::vector<Expr>& vars, const std::vector<int>& accs) const;

  std::vector<Expr> vars_of(const std::vector<Expr>& exprs) const;

  static std::vector<int> accs_of(const Value& v);

  Value emit(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx);

  Value edge(const Edge& e, const std::vector<Expr>& coords, const Expr& guard, Context& ctx);

  Value edge_value(const Edge& e, const std::vector<Expr>& coords, const Expr& guard, Context& ctx);

  // Where node n at `coords` is computed (the innermost level its coordinates
  // use), its memo key, and its value if an enclosing level has it already.
  struct Memoized {
    size_t at;
    Key key;
    std::optional<Value> found;
  };
  Memoized memoized(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx,
                    std::map<Key, Value> Level::*memo);

  Value compute(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx);

  Value compute_value(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx);

  std::string label(NodeId n) const;

  Value reduce(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx);

  // pair_dot: the contraction n steps through its axis two at a time, each
  // step one PairDot of its product's operands at k = 2·p and 2·p + 1 (the
  // packed operand reads its interleaved pair). Blocks of two cover the part
  // of the axis restricted_loops.h keeps (terms outside it are the identity).
  Value pair_reduce(NodeId n, const Key& key, size_t at, int acc, const Expr& extent, const AxisRange& range,
                    const Expr& guard, const std::vector<Expr>& coords, Context& inner);

  // The part of reduction n's axis to loop over (restricted_loops.h): the
  // lanes of the levels it is computed in share its loop; the loops outside
  // it that vary the output points (deeper levels, lanes) decide whether any
  // point needs it.
  AxisRange reduction_range_at(NodeId n, const std::vector<Expr>& coords, const Context& ctx, size_t at, bool cut);

  // A reduction over a few elements, written out: op(v(0), v(1), ...).
  Value small_reduce(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx);

  Value gather(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx);

  void collect_dims();

  std::map<const Edge*, Packed> packed_;
  NodeId pair_reduction_ = -1;  // the contraction a pair_dot schedule steps two at a time
  // The reduction rfactor cuts; `part` is defined while lowering its parts.
  struct Rfactor {
    NodeId node = -1;
    int64_t parts = 1;
    int scratch = -1;
    Expr part;
  } rfactor_;
  std::vector<ScratchBuffer> scratch_;
  std::map<const Level*, NodeId> reducing_;  // loop levels a reduction opened -> that reduction
  std::set<NodeId> nesting_;                  // reductions with another reduction's loop inside theirs
  std::vector<Kernel> pre_kernels_;
  std::vector<std::vector<NodeId>> pre_buffer_nodes_;

  const Graph& graph_;
  const std::vector<bool>& materialized_;
  const Schedule& schedule_;
  LowerOptions options_;
  Kernel kernel_;
  VarMap clamped_;  // overhanging dynamic coordinates: placeholder -> min(coordinate, extent - 1); loops narrowed
                    // inside a live branch (narrowed_to): placeholder -> variable - lower bound
  std::vector<NodeId> buffer_nodes_;
  std::vector<double> evaluations_;
  std::vector<std::unique_ptr<Level>> levels_;
  int next_acc_ = 0;
  int next_reduce_ = 0;
  int next_gather_ = 0;
  KnownRegions known_{graph_};
  Expr target_live_;      // where the kernel's output is not a known constant
  bool skipped_ = false;  // a reduction skips output points outside target_live_
};

}  // namespace lumen::kernel::lowering
