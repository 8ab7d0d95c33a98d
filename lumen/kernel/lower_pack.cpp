// Lowerer's packed operands: pack kernels run first, panels packed inline, loads from panels.
#include "lumen/kernel/lowerer.h"

namespace lumen::kernel::lowering {

LoweredKernel Lowerer::run_pack(const Edge& edge, const Packed& pk, const std::string& name) {
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

void Lowerer::prepare_pack(NodeId target, int operand, int64_t nr, const std::string& name) {
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
  // A static N that nr does not divide (and no bf16 pairs): its last panel holds zeros past N.
  if (n.is_const() && n_factor % nr != 0 && schedule_.pair_dot() != operand) pk.n_extent = n.value();
  if (n_factor == 0 || (n_factor % nr != 0 && pk.n_extent == 0)) {
    fail("schedule: pack(", operand, ", ", nr, ") does not divide N = ", n, " of the product ", to_string(m.shape),
         " in kernel ", target, " (", op_name(graph_.node(target).op), " ", to_string(graph_.node(target).shape), ")");
  }
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
  pk.shape.push_back(pk.n_extent > 0 ? Expr((pk.n_extent + nr - 1) / nr) : simplify(n / nr));
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

void Lowerer::check_pair_dot(const Node& reduction, int operand) const {
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

void Lowerer::pack_inline(const Edge& e, const Packed& pk, const std::vector<Expr>& coords, Context& ctx) {
  if (pk.rank != coords.size() + 1) {  // a product summed over several axes (nested sums merged into one)
    fail("schedule: pack_inline needs a contraction over one axis of its product; this one sums ",
         pk.rank - coords.size(), " axes (pack before the kernel instead)");
  }
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

void Lowerer::copy_to_panel(const Edge& e, const Packed& pk, const std::vector<Expr>& panel, int buffer, Context& ctx) {
  std::vector<Expr> at = product_of(pk, panel);
  Expr inside = pk.n_extent > 0 ? simplify(lt(at[pk.n_dim], Expr(pk.n_extent))) : Expr(1);
  Value v = edge_value(e, at, inside, ctx);
  // Past N: zeros, nothing read.
  if (pk.n_extent > 0) v = select(index_value(inside, DType::Bool), v, number(0, graph_.node(e.node).dtype));
  ctx.back()->block.push_back(Stmt::store(buffer, flat_index(pk.shape, panel), v));
}

Value Lowerer::packed_load(const Edge& e, const Packed& pk, const std::vector<Expr>& coords, const Expr& guard) {
  int buffer = buffer_for(-1 - pk.scratch);
  std::vector<Expr> point = coords;
  // The last tile's columns past N are clamped to N - 1 (lowering's overhang); the panel has them, as zeros.
  const Expr& n = point[pk.n_dim];
  if (pk.n_extent > 0 && n.kind() == ExprKind::Min) {
    if (n.b().is_const(pk.n_extent - 1)) point[pk.n_dim] = n.a();
    else if (n.a().is_const(pk.n_extent - 1)) point[pk.n_dim] = n.b();
  }
  Expr at = flat_index(pk.shape, panel_of(pk, point));
  if (pk.pairs) return cast(load(buffer, DType::BF16, at, simplify(guard)), DType::F32);  // exact: a bf16 value
  return load(buffer, graph_.node(e.node).dtype, at, simplify(guard));
}

}  // namespace lumen::kernel::lowering
