#include "lumen/kernel/two_place_gather.h"

#include "lumen/core/simplify.h"

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

}  // namespace lumen::kernel
