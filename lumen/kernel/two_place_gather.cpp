#include "lumen/kernel/two_place_gather.h"

#include <unordered_map>

#include "lumen/core/linear_form.h"

#include "lumen/core/simplify.h"
#include "lumen/kernel/known_region.h"
#include "lumen/kernel/lower.h"

namespace lumen::kernel {

namespace {

// An integer value known without data: an Index value, a number, or an
// integer cast of one.
std::optional<Expr> affine_of(const Value& v) {
  if (v->kind == ValueKind::Index) return v->index;
  if (v->kind == ValueKind::Number && v->dtype != DType::Bool) {
    auto n = static_cast<int64_t>(v->number);
    if (static_cast<double>(n) == v->number) return Expr(n);
    return std::nullopt;
  }
  if (v->kind == ValueKind::Cast && !is_float(v->dtype) && !is_float(v->args[0]->dtype)) return affine_of(v->args[0]);
  return std::nullopt;
}

// cond·offset with cond a boolean cast to an integer.
std::optional<TwoPlaceIndex> scaled_condition(const Value& v) {
  if (v->kind != ValueKind::Binary || v->op != Op::Mul) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const Value& c = v->args[static_cast<size_t>(side)];
    const Value& k = v->args[static_cast<size_t>(1 - side)];
    if (c->kind != ValueKind::Cast || c->args[0]->dtype != DType::Bool || is_float(c->dtype)) continue;
    if (auto offset = affine_of(k)) return TwoPlaceIndex{c->args[0], Expr(0), *offset};
  }
  return std::nullopt;
}

}  // namespace

std::optional<TwoPlaceIndex> two_place_index(const Value& index, const Expr& size) {
  if (index->dtype != DType::I32 || index->kind != ValueKind::Binary || index->op != Op::Add) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    auto position = affine_of(index->args[static_cast<size_t>(side)]);
    auto scaled = scaled_condition(index->args[static_cast<size_t>(1 - side)]);
    if (!position || !scaled) continue;
    Expr p = simplify(*position), q = simplify(*position + scaled->offset);
    // i32 arithmetic: both places must also stay far from overflow, which
    // lying in [0, size) with size a buffer extent guarantees.
    if (!prove(le(Expr(0), p)) || !prove(lt(p, size)) || !prove(le(Expr(0), q)) || !prove(lt(q, size))) {
      return std::nullopt;
    }
    return TwoPlaceIndex{scaled->cond, p, simplify(scaled->offset)};
  }
  return std::nullopt;
}

namespace {

// The nodes read at `coords` (the gather's canonical coordinates) at the
// same flat position of a buffer shaped like the gather: directly, or through
// inlined elementwise nodes read at some other point (the table's half).
void sources_at(const Graph& graph, const Edge& e, const std::vector<Expr>& at, const Node& gather,
                const std::vector<bool>& materialized, int depth, std::vector<NodeId>& out) {
  View::Index vi = e.view.index(at);
  if (!simplify(vi.valid).is_const(1) || depth > 2) return;
  const Node& producer = graph.node(e.node);
  Expr flat = simplify(vi.index);
  if (producer.shape == gather.shape && flat == flat_index(gather.shape, loop_indices(gather.shape))) {
    out.push_back(e.node);
    return;
  }
  if (materialized[static_cast<size_t>(e.node)] || !is_binary(producer.op)) return;
  std::vector<Expr> coords = unflatten(flat, producer.shape);
  for (const Edge& in : producer.inputs) sources_at(graph, in, coords, gather, materialized, depth + 1, out);
}

// A constant's value where the edge reading it is at `coords`.
std::optional<Expr> constant_at(const Graph& graph, const Edge& e, const std::vector<Expr>& coords) {
  const Node& k = graph.node(e.node);
  if (k.op != Op::Constant) return std::nullopt;
  if (!k.pattern.defined()) {
    auto v = static_cast<int64_t>(k.number);
    if (static_cast<double>(v) != k.number) return std::nullopt;
    return Expr(v);
  }
  View::Index vi = e.view.index(coords);
  if (!simplify(vi.valid).is_const(1)) return std::nullopt;
  std::vector<Expr> at = unflatten(simplify(vi.index), k.shape);
  std::unordered_map<Expr, Expr, ExprHash> to;
  std::vector<Expr> idx = loop_indices(k.shape);
  for (size_t d = 0; d < idx.size(); ++d) to[idx[d]] = at[d];
  return simplify(substitute(k.pattern, to));
}

// The coordinates of the producer an edge reads at `coords`.
std::vector<Expr> producer_coords(const Graph& graph, const Edge& e, const std::vector<Expr>& coords) {
  return unflatten(simplify(e.view.index(coords).index), graph.node(e.node).shape);
}

// The places read from the index's structure as where() builds it (for a
// condition computed from data, which KnownRegions leaves unknown).
std::optional<TwoPlaces> structural_places(const Graph& graph, const Node& node,
                                           const std::vector<bool>& materialized) {
  const Edge& top = node.inputs[1];
  const Node& add = graph.node(top.node);
  if (add.op != Op::Add || !simplify(top.view.index(loop_indices(node.shape)).valid).is_const(1)) return std::nullopt;
  std::vector<Expr> at = producer_coords(graph, top, loop_indices(node.shape));
  std::optional<Expr> position, offset;
  for (const Edge& e : add.inputs) {
    const Node& side = graph.node(e.node);
    if (side.op == Op::Constant) {
      position = constant_at(graph, e, at);
      continue;
    }
    if (side.op != Op::Mul || materialized[static_cast<size_t>(e.node)]) return std::nullopt;
    std::vector<Expr> in = producer_coords(graph, e, at);
    for (const Edge& f : side.inputs) {
      if (graph.node(f.node).op == Op::Constant) offset = constant_at(graph, f, in);
    }
  }
  if (!position || !offset) return std::nullopt;
  return TwoPlaces{simplify(*position), simplify(*position + *offset)};
}

}  // namespace

// From what KnownRegions knows of the index; from where()'s structure when it
// knows no exact value (a condition from data, or read at a chunk's origin).
std::optional<TwoPlaces> two_places(const Graph& graph, NodeId n, const std::vector<bool>& materialized) {
  const Node& node = graph.node(n);
  if (node.op != Op::Gather || node.axis != 0 || node.inputs[1].view.rank() != node.shape.size()) return std::nullopt;
  if (node.inputs[0].view.rank() != 1) return std::nullopt;
  if (materialized[static_cast<size_t>(node.inputs[1].node)]) return std::nullopt;
  std::vector<Expr> coords = loop_indices(node.shape);
  KnownRegions known(graph);
  Known index = known.through(node.inputs[1], coords);
  if (!index.exact.defined()) {
    if (two_place_index_constants(graph, n, materialized).empty()) return std::nullopt;
    return structural_places(graph, node, materialized);
  }
  auto form = LinearForm::of(index.exact);  // position + cond·offset
  if (!form) return std::nullopt;
  Expr position = Expr(form->constant), offset;
  for (const auto& [term, coefficient] : form->terms) {
    if (term.lo() >= 0 && term.hi() <= 1 && !offset.defined()) {
      offset = Expr(coefficient);
    } else {
      position = position + term * coefficient;
    }
  }
  if (!offset.defined()) return std::nullopt;
  return TwoPlaces{simplify(position), simplify(position + offset)};
}

std::vector<NodeId> two_place_sources(const Graph& graph, NodeId n, const std::vector<bool>& materialized) {
  std::optional<TwoPlaces> places = two_places(graph, n, materialized);
  if (!places) return {};
  const Node& node = graph.node(n);
  std::vector<NodeId> out;
  for (const Expr& p : {places->unset, places->set}) sources_at(graph, node.inputs[0], {p}, node, materialized, 0, out);
  return out;
}

std::vector<NodeId> two_place_index_constants(const Graph& graph, NodeId n, const std::vector<bool>& materialized) {
  const Node& node = graph.node(n);
  if (node.op != Op::Gather || node.inputs.size() != 2) return {};
  NodeId top = node.inputs[1].node;
  const Node& add = graph.node(top);
  if (materialized[static_cast<size_t>(top)] || add.op != Op::Add) return {};
  std::vector<NodeId> out;
  bool scaled = false;
  for (const Edge& e : add.inputs) {
    const Node& side = graph.node(e.node);
    if (side.op == Op::Constant) {
      out.push_back(e.node);
      continue;
    }
    if (side.op != Op::Mul || materialized[static_cast<size_t>(e.node)] || scaled) return {};
    scaled = true;
    for (const Edge& f : side.inputs) {
      const Node& k = graph.node(f.node);
      if (k.op == Op::Constant) {
        out.push_back(f.node);
      } else if (k.op != Op::Cast || graph.node(k.inputs[0].node).dtype != DType::Bool) {
        return {};
      }
    }
  }
  if (!scaled) return {};
  return out;
}

}  // namespace lumen::kernel
