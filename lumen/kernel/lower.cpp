#include "lumen/kernel/lower.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>

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

namespace lumen::kernel {

namespace {

DType accumulator_dtype(DType d) { return d == DType::F16 || d == DType::BF16 ? DType::F32 : d; }

// What a sum or a max starts from.
double identity_of(Op op, DType dtype) {
  if (op == Op::SumReduce) return 0;
  if (dtype == DType::I64) return -0x1p63;  // INT64_MIN, exact in double
  return is_float(dtype) ? -INFINITY : dtype == DType::I32 ? INT32_MIN : 0;
}

class Lowerer {
 public:
  Lowerer(const Graph& g, const std::vector<bool>& materialized, const Schedule& schedule, const LowerOptions& options)
      : graph_(g), materialized_(materialized), schedule_(schedule), options_(options), evaluations_(g.size(), 0.0) {}

  LoweredKernel run(NodeId target, const std::string& name) {
    const Node& t = graph_.node(target);
    kernel_.name = name;
    kernel_.prefetch_rows = schedule_.prefetch();
    kernel_.gpu_reduce = schedule_.gpu_reduce();
    kernel_.gpu_group = schedule_.gpu_group();
    bool into = options_.store_node >= 0;
    buffer_for(into ? options_.store_node : target, true);
    find_nested_reductions(target);
    for (const auto& [operand, nr] : schedule_.packs()) prepare_pack(target, operand, nr, name);
    if (schedule_.rfactor() > 1) prepare_rfactor(target, name);
    levels_.push_back(std::make_unique<Level>());
    Context ctx{levels_.back().get()};
    std::vector<Expr> coords = open_output_loops(t.shape, ctx, false);
    for (const auto& [e, pk] : packed_) {
      if (pk.made_inline) pack_inline(*e, pk, coords, ctx);
    }
    // Where the output is a known constant (known_region.h), a point (or a
    // tile of lanes) stores it without computing: loops of extent 0 or 1 do the choosing.
    std::vector<Expr> whole = coords;
    Known known = region_of(known_.at(target, coords));
    bool region = !known.exact.defined() && !known.live.is_const(1);
    std::optional<RestrictedOutput> cut = region ? restrict_output(target, t.shape, coords, ctx) : std::nullopt;
    if (region) target_live_ = as_predicate(region_of(known_.at(target, coords)).live);  // at the restricted coords
    std::vector<LoopVar> lanes;
    for (const Level* l : ctx) {
      if (l->kind == LoopKind::Unroll || l->kind == LoopKind::Vector) {
        lanes.push_back({l->var, l->extent});
        lanes.insert(lanes.end(), l->stand_ins.begin(), l->stand_ins.end());
      }
    }
    Expr needed = cut || !target_live_.defined() ? Expr(1) : for_some(target_live_, lanes);
    size_t keep = ctx.size();
    if (!needed.is_const(1)) ctx.push_back(open(Expr::index("live", Expr(1)), simplify(select(needed, 1, 0)), LoopKind::Serial));
    Value v = compute(target, coords, Expr(1), ctx);
    if (skipped_) v = select(index_value(target_live_, DType::Bool), v, number(known.value, t.dtype));
    Expr at = store_index(coords);
    ctx.back()->block.push_back(Stmt::store(0, at, v));
    if (!needed.is_const(1)) {
      close(ctx, keep);
      ctx.push_back(open(Expr::index("known", Expr(1)), simplify(select(needed, 0, 1)), LoopKind::Serial));
      ctx.back()->block.push_back(Stmt::store(0, at, number(known.value, t.dtype)));
    }
    if (cut) store_outside(*cut, whole, number(known.value, t.dtype), ctx);
    return finish(ctx);
  }

  // The innermost serial output loop (its lanes inside it along the same
  // dim) restricted to the blocks where the output is not its known constant.
  std::optional<RestrictedOutput> restrict_output(NodeId target, const Shape& shape, std::vector<Expr>& coords, Context& ctx) {
    size_t l = ctx.size() - 1;
    while (l > 0 && (ctx[l]->kind == LoopKind::Unroll || ctx[l]->kind == LoopKind::Vector)) --l;
    const Level& lane = *ctx.back();
    if (l == 0 || l + 1 == ctx.size() || ctx[l]->kind != LoopKind::Serial || !lane.extent.is_const()) return std::nullopt;
    int64_t u = lane.extent.value();
    auto d = static_cast<size_t>(std::find(coords.begin(), coords.end(), simplify(ctx[l]->var * u + lane.var)) - coords.begin());
    std::vector<LoopVar> others;
    for (size_t i = l + 1; i + 1 < ctx.size(); ++i) others.push_back({ctx[i]->var, ctx[i]->extent});
    if (d == coords.size() || !shape[d].is_const() || shape[d].value() % u != 0) return std::nullopt;  // static dims only
    auto range = output_range(known_, target, shape, coords, d, others);
    if (!range) return std::nullopt;
    AxisRange axis{range->lo, range->hi, Expr(1)};
    RestrictedOutput out{l, d, u, ctx[l]->extent, first_block(axis, u), block_count(axis, u, ctx[l]->extent), {}};
    for (size_t i = l + 1; i < ctx.size(); ++i) out.lanes.push_back({ctx[i]->var, ctx[i]->extent, ctx[i]->kind});
    ctx[l]->extent = out.count;
    ctx[l]->counted = out.full;
    coords[d] = simplify((out.first + ctx[l]->var) * u + lane.var);
    return out;
  }

  // The restricted output loop's other blocks: the known constant, stored.
  void store_outside(const RestrictedOutput& cut, std::vector<Expr> coords, const Value& constant, Context& ctx) {
    close(ctx, cut.level);
    Expr rest = simplify(cut.full - cut.first - cut.count);
    for (const auto& [begin, count] : {std::make_pair(Expr(0), cut.first), std::make_pair(simplify(cut.first + cut.count), rest)}) {
      if (count.is_const(0)) continue;
      Expr var = Expr::index("k" + std::to_string(ctx.size()) + (begin.is_const(0) ? "_lo" : "_hi"), cut.full);
      ctx.push_back(open(var, count, LoopKind::Serial));
      for (const LaneLoop& lane : cut.lanes) ctx.push_back(open(lane.var, lane.extent, lane.kind));
      coords[cut.dim] = simplify((begin + var) * cut.step + cut.lanes.back().var);
      ctx.back()->block.push_back(Stmt::store(0, store_index(coords), constant));
      close(ctx, cut.level);
    }
  }

  // Where the output at `coords` is stored (into a state's view, or its own buffer).
  Expr store_index(const std::vector<Expr>& coords) const {
    if (options_.store_node >= 0) return simplify(options_.store_view.index(coords).index);
    return flat_index(graph_.node(buffer_nodes_[0]).shape, coords);
  }

  // rfactor's first kernel: part p of the reduction `node` at every output
  // point, stored at [p, point] in the partials buffer. The parts are the
  // parallel loop; the output loops follow, as the schedule arranges them.
  LoweredKernel run_partials(NodeId node, const std::string& name) {
    const Node& x = graph_.node(node);
    kernel_.name = name;
    kernel_.buffers.push_back({"partials" + std::to_string(rfactor_.scratch), accumulator_dtype(x.dtype), true});
    buffer_nodes_.push_back(-1 - rfactor_.scratch);
    levels_.push_back(std::make_unique<Level>());
    Context ctx{levels_.back().get()};
    rfactor_.part = Expr::index("rp", Expr(rfactor_.parts));
    ctx.push_back(open(rfactor_.part, Expr(rfactor_.parts), LoopKind::Parallel));
    std::vector<Expr> coords = open_output_loops(x.shape, ctx, true);
    Value v = compute(node, coords, Expr(1), ctx);
    Expr at = simplify(rfactor_.part * shape_numel(x.shape) + flat_index(x.shape, coords));
    ctx.back()->block.push_back(Stmt::store(0, at, v));
    return finish(ctx);
  }

  // Runs `target` as a plain copy: the pack kernel writes operand `edge` of the
  // product into panels. Coordinates of the product come from the panel's.
  LoweredKernel run_pack(const Edge& edge, const Packed& pk, const std::string& name) {
    kernel_.name = name;
    kernel_.buffers.push_back({"packed", pk.pairs ? DType::BF16 : graph_.node(edge.node).dtype, true});
    buffer_nodes_.push_back(-1 - pk.scratch);
    levels_.push_back(std::make_unique<Level>());
    Context ctx{levels_.back().get()};
    std::vector<Expr> panel(pk.shape.size());
    for (size_t d = 0; d < pk.shape.size(); ++d) panel[d] = Expr::index("p" + std::to_string(d), pk.shape[d]);
    // Loops over [kept..., N/nr, K, nr]; an operand contiguous along n (B of a
    // row-major matmul) is read row by row instead, k outside the panels: its
    // rows stream, rather than every panel striding down all rows.
    std::vector<size_t> order(pk.shape.size());
    for (size_t d = 0; d < order.size(); ++d) order[d] = d;
    if (pk.rows_outer) std::swap(order[pk.kept.size()], order[pk.kept.size() + 1]);
    // One contiguous along k is read as vectors along k (stored at stride nr),
    // not by the lanes' gather striding a row per lane: k is the SIMD dim.
    // Pairs ([.., N/nr, K/2, nr, 2]) keep the lanes along n, with the two k
    // of a pair unrolled inside them: each half of a pair is stored at stride 2.
    if (pk.k_inner && !pk.pairs) std::swap(order[pk.kept.size() + 1], order[pk.kept.size() + 2]);
    size_t last = pk.pairs ? pk.shape.size() - 2 : pk.shape.size() - 1;
    size_t vector_dim = pk.k_inner && !pk.pairs ? last - 1 : last;
    bool parallel = false;
    for (size_t i = 0; i < order.size(); ++i) {
      size_t d = order[i];
      bool lanes = d == vector_dim;
      bool pair = pk.pairs && d == pk.shape.size() - 1;
      if (pk.shape[d].is_const(1) && !lanes) {  // no loop: the first loop with work runs in parallel
        panel[d] = Expr(0);
        continue;
      }
      LoopKind kind = lanes ? LoopKind::Vector : pair ? LoopKind::Unroll : !parallel ? LoopKind::Parallel : LoopKind::Serial;
      parallel = true;
      ctx.push_back(open(panel[d], pk.shape[d], kind));
    }
    copy_to_panel(edge, pk, panel, 0, ctx);
    return finish(ctx);
  }

 private:
  // The schedule's output loops over `shape`, opened in ctx; returns the
  // output coordinates (sums of loop variables times steps, overhang clamped).
  // `serial`: a parallel loop runs serially (another loop is the parallel one).
  std::vector<Expr> open_output_loops(const Shape& shape, Context& ctx, bool serial) {
    std::vector<Expr> coords(shape.size(), Expr(0));
    std::vector<Level*> innermost(shape.size(), nullptr);  // the last loop opened for each dim
    size_t counter = 0;
    bool inside_parallel = false;
    for (const LoopDef& l : schedule_.loops()) {
      std::string vname = "i" + std::to_string(l.dim);
      if (std::count_if(schedule_.loops().begin(), schedule_.loops().end(), [&](const LoopDef& o) { return o.dim == l.dim; }) > 1) {
        vname += "_" + std::to_string(counter);
      }
      ++counter;
      // A loop of one iteration inside the parallel loop is not opened (its
      // coordinate is 0), so what a row needs is computed next to the row's
      // reductions (a chunk kernel's size-1 head dims sit inside its rows).
      if (inside_parallel && l.extent.is_const(1) && l.kind == LoopKind::Serial) continue;
      inside_parallel = inside_parallel || l.kind == LoopKind::Parallel;
      Expr var = Expr::index(vname, l.extent);
      coords[static_cast<size_t>(l.dim)] = coords[static_cast<size_t>(l.dim)] + var * l.step;
      ctx.push_back(open(var, l.extent, serial && l.kind == LoopKind::Parallel ? LoopKind::Serial : l.kind));
      innermost[static_cast<size_t>(l.dim)] = ctx.back();
    }
    clamp_overhang(shape, coords, innermost);
    return coords;
  }

  LoweredKernel finish(Context& ctx) {
    close(ctx, 1);
    kernel_.body = std::move(ctx[0]->block);
    if (!clamped_.empty()) kernel_.body = substituted(kernel_.body, clamped_);  // placeholders -> clamped coordinates
    kernel_.accumulators = next_acc_;
    collect_dims();
    LoweredKernel out;
    out.kernel = std::move(kernel_);
    out.buffer_nodes = std::move(buffer_nodes_);
    out.evaluations = std::move(evaluations_);
    out.pre_kernels = std::move(pre_kernels_);
    out.pre_buffer_nodes = std::move(pre_buffer_nodes_);
    out.scratch = std::move(scratch_);
    return out;
  }

  // SIMD lanes go to the innermost reductions: a reduction whose loop holds
  // another's (a mean over batch and positions: positions inside batch) keeps
  // scalar steps, so the inner one, which walks memory in order, gets the
  // lanes. Which reductions hold others is found by lowering once plainly.
  void find_nested_reductions(NodeId target) {
    if (schedule_.reduce_lanes() < 2) return;
    Schedule plain(graph_.node(target).shape);  // no lanes: the probe does not probe again
    Lowerer probe(graph_, materialized_, plain, options_);
    probe.run(target, "probe");
    nesting_ = std::move(probe.nesting_);
  }

  // rfactor(p): the kernel's outer reduction is computed in p parts by a
  // kernel run first (run_partials); this kernel combines them (combine_parts).
  void prepare_rfactor(NodeId target, const std::string& name) {
    int64_t parts = schedule_.rfactor();
    NodeId node = outer_reduction_of(graph_, target, materialized_);
    if (node < 0) {
      fail("schedule: rfactor needs a reduction at the output points; node ", target, " (",
           op_name(graph_.node(target).op), ") computes none");
    }
    if (!packed_.empty()) fail("schedule: rfactor and pack do not combine");
    const Node& x = graph_.node(node);
    const Expr& extent = x.inputs[0].view.shape()[static_cast<size_t>(x.axis)];
    int64_t factor = known_factor(extent);
    if (factor == 0 || factor % parts != 0) {
      fail("schedule: rfactor(", parts, ") does not divide the reduction's extent ", extent);
    }
    rfactor_.node = node;
    rfactor_.parts = parts;
    rfactor_.scratch = static_cast<int>(scratch_.size());
    scratch_.push_back({simplify(shape_numel(x.shape) * parts), accumulator_dtype(x.dtype), "partials"});
    Lowerer partials(graph_, materialized_, schedule_, options_);
    partials.rfactor_ = rfactor_;
    partials.nesting_ = nesting_;
    LoweredKernel k = partials.run_partials(node, name + "_parts");
    pre_kernels_.push_back(std::move(k.kernel));
    pre_buffer_nodes_.push_back(std::move(k.buffer_nodes));
  }

  // The reduction rfactor cut, at `coords`: its parts combined.
  Value combine_parts(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
    const Node& node = graph_.node(n);
    auto [at, key, found] = memoized(n, coords, guard, ctx, &Level::reduce_memo);
    if (found) return *found;
    Context inner(ctx.begin(), ctx.begin() + static_cast<long>(at) + 1);
    DType acc_dtype = accumulator_dtype(node.dtype);
    int acc = start_accumulator(node, inner);
    size_t keep = inner.size();
    Expr part = Expr::index("r" + std::to_string(next_reduce_++), Expr(rfactor_.parts));
    inner.push_back(open(part, Expr(rfactor_.parts), LoopKind::Serial));
    Expr index = simplify(part * shape_numel(node.shape) + flat_index(node.shape, coords));
    Value v = load(buffer_for(-1 - rfactor_.scratch), acc_dtype, index, simplify(guard));
    inner.back()->block.push_back(Stmt::acc_update(acc, combine_of(node), v));
    close(inner, keep);
    Value result = cast(acc_value(acc, acc_dtype), node.dtype);
    ctx[at]->reduce_memo[key] = result;
    return result;
  }

  static Combine combine_of(const Node& reduction) {
    return reduction.op == Op::SumReduce ? Combine::Sum : Combine::Max;
  }

  // A fresh accumulator for `reduction`, initialised at the innermost level of `inner`.
  int start_accumulator(const Node& reduction, Context& inner) {
    int acc = next_acc_++;
    inner.back()->block.push_back(Stmt::acc_init(acc, accumulator_dtype(reduction.dtype), combine_of(reduction)));
    inner.back()->accs.push_back(acc);
    return acc;
  }

  void prepare_pack(NodeId target, int operand, int64_t nr, const std::string& name) {
    NodeId reduce = contraction_of(graph_, target, materialized_);
    if (reduce < 0) {
      fail("schedule: pack needs a contraction (a sum of an inlined product); node ", target, " (",
           op_name(graph_.node(target).op), ") computes none");
    }
    const Node& t = graph_.node(reduce);
    NodeId mul = t.inputs[0].node;
    const Node& m = graph_.node(mul);
    const Edge& e = m.inputs[static_cast<size_t>(operand)];
    Packed pk;
    pk.nr = nr;
    pk.rank = m.shape.size();
    pk.k_dim = static_cast<size_t>(t.axis);
    pk.n_dim = m.shape.size() - 1 == pk.k_dim ? m.shape.size() - 2 : m.shape.size() - 1;
    if (m.shape.size() < 2) fail("schedule: pack needs a product of rank >= 2");
    const Expr& n = m.shape[pk.n_dim];
    int64_t n_factor = known_factor(n);
    if (n_factor == 0 || n_factor % nr != 0) fail("schedule: pack(", operand, ", ", nr, ") does not divide N = ", n);
    // Dims the operand varies along (besides n and k) are kept; broadcast dims are not stored.
    std::vector<Expr> probe = loop_indices(m.shape);
    View::Index at = e.view.index(probe);  // padding varies the value as much as the index does
    std::vector<Expr> vars_used = vars_of({at.index, at.valid});
    for (size_t d = 0; d < m.shape.size(); ++d) {
      if (d == pk.n_dim || d == pk.k_dim) continue;
      if (std::find(vars_used.begin(), vars_used.end(), probe[d]) != vars_used.end()) {
        pk.kept.push_back(d);
        pk.shape.push_back(m.shape[d]);
      }
    }
    pk.pairs = schedule_.pair_dot() == operand;
    if (pk.pairs) {
      check_pair_dot(t, operand);
      pair_reduction_ = reduce;
    }
    pk.shape.push_back(simplify(n / nr));
    pk.shape.push_back(pk.pairs ? simplify(m.shape[pk.k_dim] / 2) : m.shape[pk.k_dim]);
    pk.shape.push_back(Expr(nr));
    if (pk.pairs) pk.shape.push_back(Expr(2));
    if (auto form = LinearForm::of(at.index)) {
      for (const auto& [term, c] : form->terms) pk.rows_outer = pk.rows_outer || (term == probe[pk.n_dim] && c == 1);
      for (const auto& [term, c] : form->terms) pk.k_inner = pk.k_inner || (term == probe[pk.k_dim] && c == 1);
      pk.k_inner = pk.k_inner && !pk.rows_outer;
    }
    pk.scratch = static_cast<int>(scratch_.size());
    scratch_.push_back({shape_numel(pk.shape), pk.pairs ? DType::BF16 : graph_.node(e.node).dtype});
    if (schedule_.pack_inline(operand)) {
      pk.made_inline = true;
      packed_[&e] = pk;
      return;
    }
    Lowerer packer(graph_, materialized_, schedule_, options_);
    LoweredKernel k = packer.run_pack(e, pk, name + "_pack" + std::to_string(operand));
    pre_kernels_.push_back(std::move(k.kernel));
    pre_buffer_nodes_.push_back(std::move(k.buffer_nodes));
    packed_[&e] = pk;
  }

  // pair_dot(operand): the contraction `reduction` sums a product of two bf16
  // values widened to f32, over an even extent, and its packed operand is
  // made before the kernel (the pair layout has no inline copy).
  void check_pair_dot(const Node& reduction, int operand) const {
    const Node& product = graph_.node(reduction.inputs[0].node);
    for (const Edge& in : product.inputs) {
      const Node& x = graph_.node(in.node);
      if (product.op != Op::Mul || x.op != Op::Cast || x.dtype != DType::F32 || graph_.node(x.inputs[0].node).dtype != DType::BF16) {
        fail("schedule: pair_dot needs a product of two bf16 values widened to f32 (the precision pass writes them); "
             "this product's operand is ", op_name(x.op), " (", dtype_name(x.dtype), ")");
      }
    }
    const Expr& k = reduction.inputs[0].view.shape()[static_cast<size_t>(reduction.axis)];
    if (known_factor(k) % 2 != 0) fail("schedule: pair_dot needs an even reduction extent, got ", k);
    if (schedule_.pack_inline(operand)) fail("schedule: pair_dot packs before the kernel; drop pack_inline(", operand, ")");
    if (schedule_.rfactor() > 1) fail("schedule: pair_dot and rfactor do not combine");
  }

  // pack_inline: the panel of `pk` that the output point `coords` reads is
  // copied at the outermost loop level that fixes it, before that level's
  // other work. Each thread must make its own panels (no two threads write
  // one), so the parallel loop must be one of the loops that choose the panel.
  void pack_inline(const Edge& e, const Packed& pk, const std::vector<Expr>& coords, Context& ctx) {
    std::vector<Expr> at = coords;  // the product point, k = 0
    at.insert(at.begin() + static_cast<long>(pk.k_dim), Expr(0));
    std::vector<Expr> panel = panel_of(pk, at);
    panel.resize(pk.kept.size() + 1);  // [kept..., n / nr]: fixed where the copy runs
    std::vector<Expr> used = vars_of(panel);
    size_t level = level_of(ctx, used, {});
    if (ctx[level]->kind == LoopKind::Unroll || ctx[level]->kind == LoopKind::Vector) {
      fail("schedule: pack_inline: the panel changes inside a lane loop (", loop_kind_name(ctx[level]->kind), " ",
           ctx[level]->var, "); the n loop must be split by the panel width ", pk.nr);
    }
    if (ctx.size() > 1 && ctx[1]->kind == LoopKind::Parallel && std::find(used.begin(), used.end(), ctx[1]->var) == used.end()) {
      fail("schedule: pack_inline: the parallel loop ", ctx[1]->var, " does not choose the panel, so two threads ",
           "would make the same panel; run the panel loop in parallel or pack before the kernel");
    }
    std::string id = std::to_string(pk.scratch);
    const Expr& depth = pk.shape[pk.shape.size() - 2];
    Expr k = Expr::index("pk" + id, depth), lane = Expr::index("pl" + id, Expr(pk.nr));
    Context inner(ctx.begin(), ctx.begin() + static_cast<long>(level) + 1);
    size_t keep = inner.size();
    inner.push_back(open(k, depth, LoopKind::Serial));
    inner.push_back(open(lane, Expr(pk.nr), LoopKind::Vector));
    panel.push_back(k);
    panel.push_back(lane);
    copy_to_panel(e, pk, panel, buffer_for(-1 - pk.scratch, true), inner);
    close(inner, keep);
  }

  // One element of a pack: operand `e` at the product point of `panel`, stored
  // at `panel` in the packed buffer.
  void copy_to_panel(const Edge& e, const Packed& pk, const std::vector<Expr>& panel, int buffer, Context& ctx) {
    Value v = edge_value(e, product_of(pk, panel), Expr(1), ctx);
    ctx.back()->block.push_back(Stmt::store(buffer, flat_index(pk.shape, panel), v));
  }

  Value packed_load(const Edge& e, const Packed& pk, const std::vector<Expr>& coords, const Expr& guard) {
    int buffer = buffer_for(-1 - pk.scratch);
    Expr at = flat_index(pk.shape, panel_of(pk, coords));
    if (pk.pairs) return cast(load(buffer, DType::BF16, at, simplify(guard)), DType::F32);  // exact: a bf16 value
    return load(buffer, graph_.node(e.node).dtype, at, simplify(guard));
  }

  // An uneven split's last tile overhangs its dim: those coordinates are
  // clamped to the last point, which is computed and stored again (same value).
  //
  // A dynamic dim overhangs when its tiles do not divide its known factor.
  // Its coordinate is then a placeholder index over the dim's extent while the
  // kernel is built — so views' index math simplifies as it does for an exact
  // loop (a reshape over past + seq rows) — and becomes the clamped coordinate
  // once the kernel is done (finish). The placeholder belongs to the dim's
  // innermost loop, where what depends on the coordinate is computed.
  void clamp_overhang(const Shape& shape, std::vector<Expr>& coords, const std::vector<Level*>& innermost) {
    for (size_t d = 0; d < coords.size(); ++d) {
      coords[d] = simplify(coords[d]);
      if (!shape[d].is_const()) {
        int64_t tile = 1;
        for (const LoopDef& l : schedule_.loops()) {
          if (static_cast<size_t>(l.dim) == d) tile = std::max(tile, l.step);
        }
        if (tile == 1 || known_factor(shape[d]) % tile == 0 || !innermost[d]) continue;
        Expr placeholder = Expr::index("c" + std::to_string(d) + "_" + std::to_string(clamped_.size()), shape[d]);
        clamped_[placeholder] = simplify(min(coords[d], shape[d] - 1));
        innermost[d]->defines.push_back(placeholder);
        innermost[d]->stand_ins.push_back({placeholder, shape[d]});
        coords[d] = placeholder;
        continue;
      }
      int64_t last = 0;
      for (const LoopDef& l : schedule_.loops()) {
        if (static_cast<size_t>(l.dim) == d && l.extent.is_const()) last += (l.extent.value() - 1) * l.step;
      }
      if (last >= shape[d].value()) coords[d] = simplify(min(coords[d], Expr(shape[d].value() - 1)));
    }
  }

  Level* open(const Expr& var, const Expr& extent, LoopKind kind, int unroll_hint = 1) {
    levels_.push_back(std::make_unique<Level>());
    Level* l = levels_.back().get();
    l->var = var;
    l->extent = extent;
    l->kind = kind;
    l->unroll_hint = unroll_hint;
    l->defines.push_back(var);
    return l;
  }

  // Closes the levels of ctx beyond `keep`, appending each loop to its parent.
  void close(Context& ctx, size_t keep) {
    while (ctx.size() > keep) {
      Level* l = ctx.back();
      ctx.pop_back();
      Stmt loop = Stmt::make_loop(l->var, l->extent, l->kind, std::move(l->block));
      loop.unroll_hint = l->unroll_hint;
      ctx.back()->block.push_back(std::move(loop));
    }
  }

  // The kernel's buffer for node n (or scratch), added at first use; `output`
  // marks it written (a buffer first read, then written, becomes an output).
  int buffer_for(NodeId n, bool output = false) {
    for (size_t i = 0; i < buffer_nodes_.size(); ++i) {
      if (buffer_nodes_[i] != n) continue;
      if (output) kernel_.buffers[i].output = true;
      return static_cast<int>(i);
    }
    if (n < 0) {  // a scratch buffer filled by a pre-kernel
      const ScratchBuffer& sb = scratch_.at(static_cast<size_t>(-1 - n));
      kernel_.buffers.push_back({sb.role + std::to_string(-1 - n), sb.dtype, output});
      buffer_nodes_.push_back(n);
      return static_cast<int>(buffer_nodes_.size() - 1);
    }
    const Node& node = graph_.node(n);
    std::string label = node.op == Op::Input ? node.name : std::string(op_name(node.op)) + "_" + std::to_string(n);
    kernel_.buffers.push_back({label, node.dtype, output});
    buffer_nodes_.push_back(n);
    return static_cast<int>(buffer_nodes_.size() - 1);
  }

  double multiplicity(const Context& ctx) const {
    double m = 1;
    for (const Level* l : ctx) {
      if (!l->extent.defined()) continue;
      m *= assumed(l->counted.defined() ? l->counted : l->extent);
    }
    return m;
  }

  double assumed(const Expr& e) const {
    Bindings b;
    for (const Expr& v : expr_vars(e)) b[v.name()] = static_cast<int64_t>(options_.assumed_dim);
    try {
      return static_cast<double>(evaluate(e, b));
    } catch (const Error&) {
      return options_.assumed_dim;
    }
  }

  // The deepest level of ctx that defines any of `vars` or initialises any of `accs`.
  size_t level_of(const Context& ctx, const std::vector<Expr>& vars, const std::vector<int>& accs) const {
    size_t deepest = 0;
    for (size_t i = 0; i < ctx.size(); ++i) {
      for (const Expr& d : ctx[i]->defines) {
        if (std::find(vars.begin(), vars.end(), d) != vars.end()) deepest = i;
      }
      for (int a : ctx[i]->accs) {
        if (std::find(accs.begin(), accs.end(), a) != accs.end()) deepest = i;
      }
    }
    return deepest;
  }

  std::vector<Expr> vars_of(const std::vector<Expr>& exprs) const {
    std::vector<Expr> vars;
    for (const Expr& e : exprs) {
      for (const Expr& v : expr_vars(e)) {
        if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
      }
    }
    return vars;
  }

  static std::vector<int> accs_of(const Value& v) {
    std::vector<int> accs;
    std::vector<const ValueNode*> stack{v.get()};
    while (!stack.empty()) {
      const ValueNode* n = stack.back();
      stack.pop_back();
      if (n->kind == ValueKind::Acc) accs.push_back(n->acc);
      for (const Value& a : n->args) stack.push_back(a.get());
    }
    return accs;
  }

  Value emit(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
    const Node& node = graph_.node(n);
    if (materialized_[static_cast<size_t>(n)]) {
      return load(buffer_for(n), node.dtype, flat_index(node.shape, coords), guard);
    }
    return compute(n, coords, guard, ctx);
  }

  Value edge(const Edge& e, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
    auto packed = packed_.find(&e);
    if (packed != packed_.end()) return packed_load(e, packed->second, coords, guard);
    return edge_value(e, coords, guard, ctx);
  }

  Value edge_value(const Edge& e, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
    View::Index vi = e.view.index(coords);
    const Node& producer = graph_.node(e.node);
    if (vi.valid.is_const(0)) return number(0, producer.dtype);  // padding: nothing to compute
    Expr valid = simplify(logical_and(guard, vi.valid));
    Value v;
    if (materialized_[static_cast<size_t>(e.node)]) {
      v = load(buffer_for(e.node), producer.dtype, vi.index, valid);
    } else {
      v = compute(e.node, unflatten(vi.index, producer.shape), valid, ctx);
    }
    if (vi.valid.is_const(1)) return v;
    return select(index_value(vi.valid, DType::Bool), v, number(0, producer.dtype));
  }

  // Where node n at `coords` is computed (the innermost level its coordinates
  // use), its memo key, and its value if an enclosing level has it already.
  struct Memoized {
    size_t at;
    Key key;
    std::optional<Value> found;
  };
  Memoized memoized(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx,
                    std::map<Key, Value> Level::*memo) {
    std::vector<Expr> deps = coords;
    deps.push_back(guard);
    size_t at = level_of(ctx, vars_of(deps), {});
    Key key{n, key_of(coords), guard.get()};
    for (size_t i = 0; i <= at; ++i) {
      auto it = (ctx[i]->*memo).find(key);
      if (it != (ctx[i]->*memo).end()) return {at, key, it->second};
    }
    return {at, key, std::nullopt};
  }

  Value compute(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
    const Node& node = graph_.node(n);
    if (is_reduce(node.op) && !is_small_reduce(node)) return reduce(n, coords, guard, ctx);
    // A value is computed once per point of the loops its coordinates use,
    // and reused by every later use at the same point.
    auto [at, key, found] = memoized(n, coords, guard, ctx, &Level::value_memo);
    if (found) return *found;
    Context used(ctx.begin(), ctx.begin() + static_cast<long>(at) + 1);
    evaluations_[static_cast<size_t>(n)] += multiplicity(used);
    Value v = compute_value(n, coords, guard, ctx);
    ctx[at]->value_memo[key] = v;
    return v;
  }

  Value compute_value(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
    const Node& node = graph_.node(n);
    if (kernel_.fused.size() < 64 && std::find(kernel_.fused.begin(), kernel_.fused.end(), label(n)) == kernel_.fused.end()) {
      kernel_.fused.push_back(label(n));
    }
    switch (node.op) {
      case Op::Input: fail("lower: input '", node.name, "' must be materialised (internal error)");
      case Op::Constant: {
        if (!node.pattern.defined()) return number(node.number, node.dtype);
        std::unordered_map<Expr, Expr, ExprHash> at;
        std::vector<Expr> idx = loop_indices(node.shape);
        for (size_t d = 0; d < idx.size(); ++d) at[idx[d]] = coords[d];
        return index_value(simplify(substitute(node.pattern, at)), node.dtype);
      }
      case Op::Cast: return cast(edge(node.inputs[0], coords, guard, ctx), node.dtype);
      case Op::Contiguous: return edge(node.inputs[0], coords, guard, ctx);
      case Op::SumReduce:
      case Op::MaxReduce: return small_reduce(n, coords, guard, ctx);
      case Op::Gather: return gather(n, coords, guard, ctx);
      default: break;
    }
    if (is_unary(node.op)) return unary(node.op, edge(node.inputs[0], coords, guard, ctx));
    if (is_binary(node.op)) {
      Value a = edge(node.inputs[0], coords, guard, ctx);
      Value b = edge(node.inputs[1], coords, guard, ctx);
      return binary(node.op, a, b);
    }
    fail("lower: cannot lower ", op_name(node.op));
  }

  std::string label(NodeId n) const {
    const Node& node = graph_.node(n);
    return std::string(op_name(node.op)) + "_" + std::to_string(n);
  }

  Value reduce(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
    const Node& node = graph_.node(n);
    bool cut = n == rfactor_.node;
    if (cut && !rfactor_.part.defined()) return combine_parts(n, coords, guard, ctx);
    auto [at, key, found] = memoized(n, coords, guard, ctx, &Level::reduce_memo);
    if (found) return *found;
    if (cut) at = std::max(at, level_of(ctx, {rfactor_.part}, {}));  // a part's loop runs inside its part
    Context inner(ctx.begin(), ctx.begin() + static_cast<long>(at) + 1);
    evaluations_[static_cast<size_t>(n)] += multiplicity(inner);
    if (kernel_.fused.size() < 64) kernel_.fused.push_back(label(n));
    // Reduce lanes are SIMD: not inside an output's SIMD loop (unrolled rows are fine).
    bool inside_lanes = std::any_of(inner.begin(), inner.end(), [](const Level* l) { return l->kind == LoopKind::Vector; });
    for (const Level* l : inner) {  // the reductions whose loops this one runs inside
      auto it = reducing_.find(l);
      if (it != reducing_.end()) nesting_.insert(it->second);
    }
    DType acc_dtype = accumulator_dtype(node.dtype);
    int acc = start_accumulator(node, inner);

    Expr extent = node.inputs[0].view.shape()[static_cast<size_t>(node.axis)];
    Expr first = Expr(0);  // rfactor's part p reduces [p * extent / parts, (p + 1) * extent / parts)
    if (cut) {
      extent = simplify(extent / rfactor_.parts);
      first = rfactor_.part * extent;
    }
    AxisRange range = reduction_range_at(n, coords, ctx, at, cut);
    int64_t lanes = schedule_.reduce_lanes();
    std::string base = "r" + std::to_string(next_reduce_++);
    Expr r;
    size_t keep = inner.size();
    int64_t factor = known_factor(extent);  // a dynamic extent such as 16*blocks splits too
    bool simd = lanes > 1 && !inside_lanes && !nesting_.count(n);  // lanes go to innermost reductions only
    bool splits = factor > 0 && factor % lanes == 0 && (!extent.is_const() || extent.value() > lanes);
    // An extent that lanes do not divide (static, or dynamic: a decode step's
    // attention over past + 1 positions) runs ceil(extent / lanes) SIMD steps;
    // the lanes past the end are masked and count as the identity.
    bool tail = !splits && (!extent.is_const() || extent.value() > lanes);
    if (n == pair_reduction_) return pair_reduce(n, key, at, acc, extent, range, guard, coords, inner);
    Expr in_range = Expr(1);
    if (simd && (splits || tail)) {
      Expr outer_extent = block_count(range, lanes, simplify(tail ? (extent + (lanes - 1)) / lanes : extent / lanes));
      Expr outer = Expr::index(base + "_o", outer_extent);
      Expr lane = Expr::index(base + "_v", Expr(lanes));
      inner.push_back(open(outer, outer_extent, LoopKind::Serial, static_cast<int>(schedule_.reduce_unroll())));
      inner.push_back(open(lane, Expr(lanes), LoopKind::Vector));
      r = (first_block(range, lanes) + outer) * lanes + lane;
      if (tail) in_range = lt(r, extent);
    } else if (int64_t n = schedule_.reduce_split(); n > 1 && factor % n == 0 && (!extent.is_const() || extent.value() > n)) {
      Expr outer_extent = block_count(range, n, simplify(extent / n));
      Expr outer = Expr::index(base + "_o", outer_extent), part = Expr::index(base + "_i", Expr(n));
      inner.push_back(open(outer, outer_extent, LoopKind::Serial, static_cast<int>(schedule_.reduce_unroll())));
      inner.push_back(open(part, Expr(n), LoopKind::Serial, static_cast<int>(n)));
      r = (first_block(range, n) + outer) * n + part;
    } else {
      Expr count = block_count(range, 1, extent);
      r = Expr::index(base, count);
      inner.push_back(open(r, count, LoopKind::Serial, static_cast<int>(schedule_.reduce_unroll())));
      r = first_block(range, 1) + r;
    }
    inner[keep]->counted = extent;  // fusion counts the whole axis (restricted extents vary)
    for (size_t i = keep; i < inner.size(); ++i) reducing_[inner[i]] = n;
    std::vector<Expr> in_coords = coords;
    in_coords.insert(in_coords.begin() + node.axis, simplify(first + r));
    Value v = cast(edge(node.inputs[0], in_coords, simplify(logical_and(guard, in_range)), inner), acc_dtype);
    if (!in_range.is_const(1)) v = select(index_value(in_range, DType::Bool), v, number(identity_of(node.op, acc_dtype), acc_dtype));
    inner.back()->block.push_back(Stmt::acc_update(acc, combine_of(node), v));
    close(inner, keep);
    // A part is stored as accumulated (f16 sums combine in f32).
    Value result = cut ? acc_value(acc, acc_dtype) : cast(acc_value(acc, acc_dtype), node.dtype);
    ctx[at]->reduce_memo[key] = result;
    return result;
  }

  // pair_dot: the contraction n steps through its axis two at a time, each
  // step one PairDot of its product's operands at k = 2·p and 2·p + 1 (the
  // packed operand reads its interleaved pair). Blocks of two cover the part
  // of the axis restricted_loops.h keeps (terms outside it are the identity).
  Value pair_reduce(NodeId n, const Key& key, size_t at, int acc, const Expr& extent, const AxisRange& range,
                    const Expr& guard, const std::vector<Expr>& coords, Context& inner) {
    const Node& node = graph_.node(n);
    const Node& product = graph_.node(node.inputs[0].node);
    size_t keep = inner.size();
    Expr count = block_count(range, 2, simplify(extent / 2));
    Expr step = Expr::index("r" + std::to_string(next_reduce_++) + "_p", count);
    inner.push_back(open(step, count, LoopKind::Serial, static_cast<int>(schedule_.reduce_unroll())));
    inner[keep]->counted = simplify(extent / 2);
    reducing_[inner[keep]] = n;
    std::vector<Value> operands;  // a0, b0, a1, b1
    for (int64_t j = 0; j < 2; ++j) {
      std::vector<Expr> in_coords = coords;
      in_coords.insert(in_coords.begin() + node.axis, simplify((first_block(range, 2) + step) * 2 + j));
      View::Index vi = node.inputs[0].view.index(in_coords);
      if (!vi.valid.is_const(1)) fail("schedule: pair_dot: the contraction reads its product through padding");
      std::vector<Expr> point = unflatten(vi.index, product.shape);
      for (const Edge& e : product.inputs) operands.push_back(edge(e, point, guard, inner));
    }
    inner.back()->block.push_back(Stmt::acc_update(acc, Combine::Sum, pair_dot(operands[0], operands[1], operands[2], operands[3])));
    close(inner, keep);
    Value result = cast(acc_value(acc, DType::F32), node.dtype);
    inner[at]->reduce_memo[key] = result;
    return result;
  }

  // The part of reduction n's axis to loop over (restricted_loops.h): the
  // lanes of the levels it is computed in share its loop; the loops outside
  // it that vary the output points (deeper levels, lanes) decide whether any
  // point needs it.
  AxisRange reduction_range_at(NodeId n, const std::vector<Expr>& coords, const Context& ctx, size_t at, bool cut) {
    std::vector<LoopVar> lanes, rest;
    for (size_t i = 1; i < ctx.size(); ++i) {
      bool lane = ctx[i]->kind == LoopKind::Unroll || ctx[i]->kind == LoopKind::Vector;
      if (i <= at && lane) {
        lanes.push_back({ctx[i]->var, ctx[i]->extent});
        lanes.insert(lanes.end(), ctx[i]->stand_ins.begin(), ctx[i]->stand_ins.end());
      }
      if (i > at || lane) {
        rest.push_back({ctx[i]->var, ctx[i]->extent});
        rest.insert(rest.end(), ctx[i]->stand_ins.begin(), ctx[i]->stand_ins.end());
      }
    }
    AxisRange range = reduction_range(known_, graph_, n, coords, lanes, rest, target_live_, cut);
    if (!range.needed.is_const(1)) skipped_ = true;
    return range;
  }

  // A reduction over a few elements, written out: op(v(0), v(1), ...).
  Value small_reduce(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
    const Node& node = graph_.node(n);
    int64_t extent = node.inputs[0].view.shape()[static_cast<size_t>(node.axis)].value();
    DType acc_dtype = accumulator_dtype(node.dtype);
    if (extent == 0) return number(identity_of(node.op, node.dtype), node.dtype);
    Value result;
    for (int64_t r = 0; r < extent; ++r) {
      std::vector<Expr> in_coords = coords;
      in_coords.insert(in_coords.begin() + node.axis, Expr(r));
      Value v = cast(edge(node.inputs[0], in_coords, guard, ctx), acc_dtype);
      if (!result) {
        result = v;
      } else if (node.op == Op::SumReduce) {
        result = acc_dtype == DType::Bool ? binary(Op::Add, result, v) : binary(Op::Add, result, v);
      } else {
        result = maximum(result, v);
      }
    }
    return cast(result, node.dtype);
  }

  Value gather(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
    const Node& node = graph_.node(n);
    auto axis = static_cast<size_t>(node.axis);
    size_t k = node.inputs[1].view.rank();
    std::vector<Expr> idx_coords(coords.begin() + static_cast<long>(axis), coords.begin() + static_cast<long>(axis + k));
    Expr size = node.inputs[0].view.shape()[axis];
    auto read_at = [&](const Expr& place) {
      std::vector<Expr> at(coords.begin(), coords.begin() + static_cast<long>(axis));
      at.push_back(place);
      at.insert(at.end(), coords.begin() + static_cast<long>(axis + k), coords.end());
      return edge(node.inputs[0], at, guard, ctx);
    };
    if (auto two = two_place_index(edge(node.inputs[1], idx_coords, guard, ctx), size)) {  // where(c, a, b)
      return select(two->cond, read_at(simplify(two->position + two->offset)), read_at(two->position));
    }
    Key key{n, key_of(idx_coords), guard.get()};
    Expr g;
    for (const Level* l : ctx) {
      auto it = l->gather_memo.find(key);
      if (it != l->gather_memo.end()) g = it->second;
    }
    if (!g.defined()) {
      Value iv = edge(node.inputs[1], idx_coords, guard, ctx);
      std::vector<Expr> deps = value_vars(iv);
      for (const Expr& v : expr_vars(guard)) deps.push_back(v);
      size_t at = level_of(ctx, deps, accs_of(iv));
      std::string name = "g" + std::to_string(next_gather_++);
      g = size.is_const() ? Expr::var(name, 0, std::max<int64_t>(size.value() - 1, 0))
                          : Expr::var(name, 0, kMaxDim, size);
      ctx[at]->block.push_back(Stmt::bind(g, iv, size, guard));
      ctx[at]->defines.push_back(g);
      ctx[at]->gather_memo[key] = g;
    }
    return read_at(g);
  }

  void collect_dims() {
    std::vector<std::string> names = graph_.dim_names();
    kernel_.dims = names;
  }

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
  VarMap clamped_;  // overhanging dynamic coordinates: placeholder -> min(coordinate, extent - 1)
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

}  // namespace

Expr flat_index(const Shape& shape, const std::vector<Expr>& coords) {
  std::vector<Expr> strides = contiguous_strides(shape);
  Expr flat = Expr(0);
  for (size_t d = 0; d < shape.size(); ++d) flat = flat + coords[d] * strides[d];
  return simplify(flat);
}

LoweredKernel lower(const Graph& graph, NodeId target, const std::vector<bool>& materialized, const Schedule& schedule,
                    const std::string& name, const LowerOptions& options) {
  if (schedule.shape().size() != graph.node(target).shape.size()) {
    fail("lower: schedule is for shape ", to_string(schedule.shape()), " but node ", target, " has shape ",
         to_string(graph.node(target).shape));
  }
  LoweredKernel lowered = Lowerer(graph, materialized, schedule, options).run(target, name);
  reuse_reduction_operands(lowered.kernel);
  if (options.split_loops) split_loops_at_conditions(lowered.kernel);
  return lowered;
}

}  // namespace lumen::kernel
