// Lowerer's loops, values, buffers and output (lowerer.h), and lower() itself.
#include "lumen/kernel/lowerer.h"

#include <algorithm>

#include "lumen/kernel/fuse_sibling_loops.h"

namespace lumen::kernel::lowering {

namespace {

// Whether e divides or takes a remainder anywhere.
bool has_division(const Expr& e) {
  if (!e.defined()) return false;
  switch (e.kind()) {
    case ExprKind::Div:
    case ExprKind::Mod: return true;
    case ExprKind::Const:
    case ExprKind::Var: return false;
    case ExprKind::Not: return has_division(e.a());
    case ExprKind::Select: return has_division(e.a()) || has_division(e.b()) || has_division(e.c());
    default: return has_division(e.a()) || has_division(e.b());
  }
}

}  // namespace

LoweredKernel Lowerer::run(NodeId target, const std::string& name) {
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
  std::vector<Expr> live_coords = coords;
  if (!needed.is_const(1)) {
    live_coords = narrowed_to(needed, coords, ctx);
    ctx.push_back(open(Expr::index("live", Expr(1)), simplify(select(needed, 1, 0)), LoopKind::Serial));
  }
  Value v = compute(target, live_coords, Expr(1), ctx);
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

std::vector<Expr> Lowerer::narrowed_to(const Expr& needed, std::vector<Expr> coords, Context& ctx) {
  Expr predicate = as_predicate(needed);
  for (Level* l : ctx) {
    if (!l->var.defined() || l->kind == LoopKind::Unroll || l->kind == LoopKind::Vector || !l->extent.is_const()) continue;
    VarRange r = range_of(predicate, l->var);
    int64_t lo = r.lo.defined() && r.lo.is_const() ? std::max<int64_t>(r.lo.value(), 0) : 0;
    int64_t hi = r.hi.defined() && r.hi.is_const() ? std::min(r.hi.value(), l->extent.value()) : l->extent.value();
    if ((lo == 0 && hi == l->extent.value()) || hi <= lo) continue;
    Expr placeholder = Expr::index(l->var.name() + "_live", Expr(hi - lo));
    clamped_[placeholder] = simplify(l->var - lo);
    l->defines.push_back(placeholder);
    l->stand_ins.push_back({placeholder, Expr(hi - lo)});
    VarMap at{{l->var, placeholder + lo}};
    for (Expr& c : coords) c = simplify(substitute(c, at));
  }
  return coords;
}

std::optional<RestrictedOutput> Lowerer::restrict_output(NodeId target, const Shape& shape, std::vector<Expr>& coords, Context& ctx) {
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

void Lowerer::store_outside(const RestrictedOutput& cut, std::vector<Expr> coords, const Value& constant, Context& ctx) {
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

Expr Lowerer::store_index(const std::vector<Expr>& coords) const {
  if (options_.store_node >= 0) return simplify(options_.store_view.index(coords).index);
  return flat_index(graph_.node(buffer_nodes_[0]).shape, coords);
}

std::vector<Expr> Lowerer::open_output_loops(const Shape& shape, Context& ctx, bool serial) {
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

LoweredKernel Lowerer::finish(Context& ctx) {
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

void Lowerer::clamp_overhang(const Shape& shape, std::vector<Expr>& coords, const std::vector<Level*>& innermost) {
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

Level* Lowerer::open(const Expr& var, const Expr& extent, LoopKind kind, int unroll_hint) {
  levels_.push_back(std::make_unique<Level>());
  Level* l = levels_.back().get();
  l->var = var;
  l->extent = extent;
  l->kind = kind;
  l->unroll_hint = unroll_hint;
  l->defines.push_back(var);
  return l;
}

void Lowerer::close(Context& ctx, size_t keep) {
  while (ctx.size() > keep) {
    Level* l = ctx.back();
    ctx.pop_back();
    Stmt loop = Stmt::make_loop(l->var, l->extent, l->kind, std::move(l->block));
    loop.unroll_hint = l->unroll_hint;
    ctx.back()->block.push_back(std::move(loop));
  }
}

namespace {

// An element count if it is static (BufferArg::numel), -1 otherwise.
int64_t static_elements(const Expr& count) {
  Expr n = simplify(count);
  return n.is_const() ? n.value() : -1;
}

}  // namespace

int Lowerer::buffer_for(NodeId n, bool output) {
  for (size_t i = 0; i < buffer_nodes_.size(); ++i) {
    if (buffer_nodes_[i] != n) continue;
    if (output) kernel_.buffers[i].output = true;
    return static_cast<int>(i);
  }
  if (n < 0) {  // a scratch buffer filled by a pre-kernel
    const ScratchBuffer& sb = scratch_.at(static_cast<size_t>(-1 - n));
    kernel_.buffers.push_back({sb.role + std::to_string(-1 - n), sb.dtype, output, static_elements(sb.elements)});
    buffer_nodes_.push_back(n);
    return static_cast<int>(buffer_nodes_.size() - 1);
  }
  const Node& node = graph_.node(n);
  std::string label = node.op == Op::Input ? node.name : std::string(op_name(node.op)) + "_" + std::to_string(n);
  kernel_.buffers.push_back({label, node.dtype, output, static_elements(shape_numel(node.shape))});
  buffer_nodes_.push_back(n);
  return static_cast<int>(buffer_nodes_.size() - 1);
}

double Lowerer::multiplicity(const Context& ctx) const {
  double m = 1;
  for (const Level* l : ctx) {
    if (!l->extent.defined()) continue;
    m *= assumed(l->counted.defined() ? l->counted : l->extent);
  }
  return m;
}

double Lowerer::assumed(const Expr& e) const {
  Bindings b;
  for (const Expr& v : expr_vars(e)) b[v.name()] = static_cast<int64_t>(options_.assumed_dim);
  try {
    return static_cast<double>(evaluate(e, b));
  } catch (const Error&) {
    return options_.assumed_dim;
  }
}

size_t Lowerer::level_of(const Context& ctx, const std::vector<Expr>& vars, const std::vector<int>& accs) const {
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

std::vector<Expr> Lowerer::vars_of(const std::vector<Expr>& exprs) const {
  std::vector<Expr> vars;
  for (const Expr& e : exprs) {
    for (const Expr& v : expr_vars(e)) {
      if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
    }
  }
  return vars;
}

std::vector<int> Lowerer::accs_of(const Value& v) {
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

Value Lowerer::emit(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
  const Node& node = graph_.node(n);
  if (materialized_[static_cast<size_t>(n)]) {
    return load(buffer_for(n), node.dtype, flat_index(node.shape, coords), guard);
  }
  return compute(n, coords, guard, ctx);
}

Value Lowerer::edge(const Edge& e, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
  auto packed = packed_.find(&e);
  if (packed != packed_.end()) return packed_load(e, packed->second, coords, guard);
  return edge_value(e, coords, guard, ctx);
}

Value Lowerer::edge_value(const Edge& e, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
  View::Index vi = e.view.index(coords);
  const Node& producer = graph_.node(e.node);
  if (vi.valid.is_const(0)) return number(0, producer.dtype);  // padding: nothing to compute
  Expr valid = simplify(logical_and(guard, vi.valid));
  if (materialized_[static_cast<size_t>(e.node)]) {
    // A load is 0 where it is not valid: no select around it (a masked SIMD load followed by a
    // blend with the same mask; 1.4x on a blocked cumsum's shifted reads, 1.5x on a 3 x 3 pool).
    return load(buffer_for(e.node), producer.dtype, vi.index, valid);
  }
  std::vector<Expr> at = unflatten(vi.index, producer.shape);
  if (!vi.valid.is_const(1) && std::any_of(at.begin(), at.end(), has_division)) {
    // A padded view of a computed value: at the padding its flat index leaves the value, so
    // its coordinates take divisions (a depthwise conv's taps over a pointwise conv's output).
    // Nothing is read there: the coordinates of the index clamped into the view's mask are
    // the same where it is valid, and often plain.
    std::vector<Expr> clamped = unflatten(simplify(e.view.clamped_index(coords)), producer.shape);
    if (std::none_of(clamped.begin(), clamped.end(), has_division)) at = clamped;
  }
  Value v = compute(e.node, at, valid, ctx);
  if (vi.valid.is_const(1)) return v;
  return select(index_value(vi.valid, DType::Bool), v, number(0, producer.dtype));
}

Lowerer::Memoized Lowerer::memoized(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx,
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

Value Lowerer::compute(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
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

Value Lowerer::compute_value(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
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

std::string Lowerer::label(NodeId n) const {
  const Node& node = graph_.node(n);
  return std::string(op_name(node.op)) + "_" + std::to_string(n);
}

Value Lowerer::gather(NodeId n, const std::vector<Expr>& coords, const Expr& guard, Context& ctx) {
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

void Lowerer::collect_dims() {
  std::vector<std::string> names = graph_.dim_names();
  kernel_.dims = names;
}

}  // namespace lumen::kernel::lowering

namespace lumen::kernel {

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
  LoweredKernel lowered = lowering::Lowerer(graph, materialized, schedule, options).run(target, name);
  reuse_reduction_operands(lowered.kernel);
  if (options.split_loops) split_loops_at_conditions(lowered.kernel);
  fuse_sibling_loops(lowered.kernel);
  return lowered;
}

}  // namespace lumen::kernel
