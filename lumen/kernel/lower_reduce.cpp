// Lowerer's reductions: accumulators, SIMD reduce lanes, rfactor's parts, pair dots, small reductions written out.
#include "lumen/kernel/lowerer.h"

namespace lumen::kernel::lowering {

LoweredKernel Lowerer::run_partials(NodeId node, const std::string& name) {
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

void Lowerer::find_nested_reductions(NodeId target) {
  if (schedule_.reduce_lanes() < 2) return;
  Schedule plain(graph_.node(target).shape);  // no lanes: the probe does not probe again
  Lowerer probe(graph_, materialized_, plain, options_);
  probe.run(target, "probe");
  nesting_ = std::move(probe.nesting_);
}

void Lowerer::prepare_rfactor(NodeId target, const std::string& name) {
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

Value Lowerer::combine_parts(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
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

int Lowerer::start_accumulator(const Node& reduction, Context& inner) {
  int acc = next_acc_++;
  inner.back()->block.push_back(Stmt::acc_init(acc, accumulator_dtype(reduction.dtype), combine_of(reduction)));
  inner.back()->accs.push_back(acc);
  return acc;
}

Value Lowerer::reduce(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
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
  // Lanes over a split's inner part of n (a quarter vector < n <= a vector: a mean over 14 x 14
  // positions stored in rows of 18): r = o·n + min(lane, n - 1), the lanes past n masked, so
  // r / n and r % n are o and the lane (KernelFacts::split_lanes).
  int64_t sn = schedule_.reduce_split();
  bool split_lanes = simd && sn > 1 && lanes_over_split(sn, lanes) && factor > 0 && factor % sn == 0 &&
                     (!extent.is_const() || extent.value() > sn);
  if (split_lanes) {
    Expr full = simplify(extent / sn);
    Expr outer = Expr::index(base + "_o", full);
    Expr lane = Expr::index(base + "_v", Expr(lanes));
    int unroll = static_cast<int>(schedule_.reduce_unroll());
    inner.push_back(open(outer, block_count(range, sn, full), LoopKind::Serial, unroll));
    inner.push_back(open(lane, Expr(lanes), LoopKind::Vector));
    r = (first_block(range, sn) + outer) * sn + min(lane, Expr(sn - 1));
    in_range = lt(lane, Expr(sn));
  } else if (simd && (splits || tail)) {
    Expr full = simplify(tail ? (extent + (lanes - 1)) / lanes : extent / lanes);
    Expr outer_extent = block_count(range, lanes, full);
    Expr outer = Expr::index(base + "_o", full);  // bounded by the whole axis: what index math simplifies against
    Expr lane = Expr::index(base + "_v", Expr(lanes));
    inner.push_back(open(outer, outer_extent, LoopKind::Serial, static_cast<int>(schedule_.reduce_unroll())));
    inner.push_back(open(lane, Expr(lanes), LoopKind::Vector));
    r = (first_block(range, lanes) + outer) * lanes + lane;
    if (tail) in_range = lt(r, extent);
  } else if (int64_t n = schedule_.reduce_split(); n > 1 && factor % n == 0 && (!extent.is_const() || extent.value() > n)) {
    Expr outer_extent = block_count(range, n, simplify(extent / n));
    Expr outer = Expr::index(base + "_o", simplify(extent / n)), part = Expr::index(base + "_i", Expr(n));
    inner.push_back(open(outer, outer_extent, LoopKind::Serial, static_cast<int>(schedule_.reduce_unroll())));
    inner.push_back(open(part, Expr(n), LoopKind::Serial, static_cast<int>(n)));
    r = (first_block(range, n) + outer) * n + part;
  } else {
    Expr count = block_count(range, 1, extent);
    r = Expr::index(base, extent);
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

Value Lowerer::pair_reduce(NodeId n, const Key& key, size_t at, int acc, const Expr& extent, const AxisRange& range,
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

AxisRange Lowerer::reduction_range_at(NodeId n, const std::vector<Expr>& coords, const Context& ctx, size_t at, bool cut) {
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
  // Output coordinates of loops not open here (a reduction hoisted above the output loops it does
  // not depend on: a causal softmax's max, read by every column of its row) vary too.
  if (target_live_.defined()) {
    for (const Expr& v : expr_vars(target_live_)) {
      bool open = graph_.has_dim(v.name());
      for (size_t i = 1; i < ctx.size() && !open; ++i) {
        open = ctx[i]->var == v || std::any_of(ctx[i]->stand_ins.begin(), ctx[i]->stand_ins.end(),
                                               [&](const LoopVar& s) { return s.var == v; });
      }
      if (!open && v.lo() == 0) rest.push_back({v, Expr(v.hi() + 1)});
    }
  }
  AxisRange range = reduction_range(known_, graph_, n, coords, lanes, rest, target_live_, cut);
  if (!range.needed.is_const(1)) skipped_ = true;
  return range;
}

Value Lowerer::small_reduce(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
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

}  // namespace lumen::kernel::lowering
