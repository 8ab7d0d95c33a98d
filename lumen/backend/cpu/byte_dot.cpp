// Two vector idioms of quantized matrix-vector products (the int8 dot
// products of lumen/compiler/int8_dot.h), found in the loop IR by what the
// values compute:
//
//  - an i32 sum whose terms are products u(A[4·l + t]) · B[4·l + t] of bytes
//    at lane stride 4, for t = 0..3 (u: an unsigned byte, a low or high
//    nibble, or a signed byte plus 128; B: a signed byte), is one vpdpbusd
//    per group of four terms: lane l takes bytes 4l..4l+3 of 64 contiguous
//    bytes of each operand (exact integer multiply-adds without VNNI); u may
//    also be a six-bit quant, a nibble of A plus 16 times bit pair c of the
//    same bytes of a second array (Q6_K: nibble | pair << 4); B may
//    also be the same four bytes for every lane (B[t]: lanes along the
//    weight's rows, which are stored 64 rows interleaved);
//  - a load whose index advances by one every c lanes (c = 2, 4, 8: a quant
//    block's scale over the lanes of its block) reads LANES / c elements and
//    spreads them.
#include <algorithm>
#include <cmath>
#include <optional>

#include "lumen/backend/cpu/writer.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/simplify.h"
#include "lumen/kernel/schedule_space.h"

namespace lumen::cpu {

using namespace lumen::kernel;

namespace {

enum class ByteForm { Raw, Low, High, Flip, Ones };  // Ones: no load, bytes of 1 (a sum of the signed bytes alone)

// Bit pair `pair` of the bytes of `buffer` at `base` (the index at lane 0), added as bits 4 and 5.
struct PairRead {
  int buffer = -1;
  Expr base;
  int pair = 0;
};

struct ByteRead {
  int buffer = -1;
  Expr base;  // the index at lane 0
  ByteForm form = ByteForm::Raw;
  Expr valid;  // where the lane reads (1: everywhere; else a mask of the lane: a vector's tail past the end)
  bool broadcast = false;  // every lane reads the same four bytes (lane stride 0: the activation when lanes are rows)
  std::optional<PairRead> pairs;  // a nibble's two high bits (six-bit quants)
};

bool is_number(const Value& v, double x) { return v->kind == ValueKind::Number && v->number == x; }

// Whether `valid` implies 0 <= a < e, checked on every point of the (few) variables involved.
bool implies_below(const Expr& valid, const Expr& a, int64_t e) {
  std::vector<Expr> vars = expr_vars(a);
  for (const Expr& v : expr_vars(valid)) {
    if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
  }
  double points = 1;
  for (const Expr& v : vars) points *= static_cast<double>(v.hi() - v.lo() + 1);
  if (points > 4096) return false;
  Bindings at;
  std::function<bool(size_t)> all = [&](size_t i) -> bool {
    if (i == vars.size()) {
      if (evaluate(valid, at) == 0) return true;
      int64_t x = evaluate(a, at);
      return x >= 0 && x < e;
    }
    for (int64_t x = vars[i].lo(); x <= vars[i].hi(); ++x) {
      at[vars[i].name()] = x;
      if (!all(i + 1)) return false;
    }
    return true;
  };
  return all(0);
}

// A reduction's vector overhanging its end reads r % E (and r / E) under the mask r < E: where
// the mask holds that is r (and 0). The index with such wraps removed, if each is proven so.
}  // namespace

std::optional<Expr> unwrap_overhang(const Expr& index, const Expr& valid, const Expr& vl) {
  if (valid.is_const(1)) return std::nullopt;
  bool ok = true;
  std::function<Expr(const Expr&)> walk = [&](const Expr& e) -> Expr {
    if (!ok || !e.defined() || !mentions(e, vl)) return e;
    switch (e.kind()) {
      case ExprKind::Add:
      case ExprKind::Mul: return make_binary(e.kind(), walk(e.a()), walk(e.b()));
      case ExprKind::Mod:
      case ExprKind::Div: {
        Expr a = simplify(walk(e.a()));
        if (!e.b().is_const() || !mentions(a, vl)) return make_binary(e.kind(), a, e.b());
        if (!implies_below(valid, a, e.b().value())) return make_binary(e.kind(), a, e.b());  // a digit of the lane: kept
        return e.kind() == ExprKind::Mod ? a : Expr(0);
      }
      default: return e;
    }
  };
  Expr out = simplify(walk(index));
  if (!ok || out == simplify(index)) return std::nullopt;
  return out;
}

namespace {

// A load of one byte per lane at lane stride 4 (or, where `broadcast` is allowed, of the same
// byte in every lane, always valid).
std::optional<ByteRead> byte_load(const Value& v, DType dtype, const Combo& combo,
                                  const std::function<Expr(const Expr&)>& subst, bool broadcast = false) {
  if (v->kind != ValueKind::Load || v->dtype != dtype) return std::nullopt;
  Expr valid = subst(v->valid);
  Expr index = subst(v->index);
  if (broadcast && valid.is_const(1) && lane_stride(index, combo.vl) == std::optional<int64_t>(0)) {
    return ByteRead{v->buffer, index, ByteForm::Raw, valid, true};
  }
  if (lane_stride(index, combo.vl) != std::optional<int64_t>(4)) {
    // A vector overhanging the reduction's end reads through min(r, R - 1): its lanes past the end
    // read nothing (masked: 0, so their products add nothing).
    if (auto u = unclamp(index, combo.vl); u && lane_stride(u->index, combo.vl) == std::optional<int64_t>(4)) {
      index = u->index;
      valid = simplify(logical_and(valid, u->in_bounds));
    } else if (auto w = unwrap_overhang(index, valid, combo.vl); w && lane_stride(*w, combo.vl) == std::optional<int64_t>(4)) {
      index = *w;
    } else {
      return std::nullopt;
    }
  }
  std::unordered_map<Expr, Expr, ExprHash> zero{{combo.vl, Expr(0)}};
  return ByteRead{v->buffer, simplify(substitute(index, zero)), ByteForm::Raw, valid};
}

// i32 of a load of `dtype`.
std::optional<ByteRead> widened(const Value& v, DType dtype, const Combo& combo, const std::function<Expr(const Expr&)>& subst,
                                bool broadcast = false) {
  if (v->kind != ValueKind::Cast || v->dtype != DType::I32) return std::nullopt;
  return byte_load(v->args[0], dtype, combo, subst, broadcast);
}

// Bit pair c of bytes as int8_dot's bit_pair writes it: i32(b) % 4, i32(f32(b) · 4^-c) % 4, or
// i32(f32(b) / 64) (c = 3).
std::optional<std::pair<ByteRead, int>> bit_pair(const Value& v, const Combo& combo,
                                                 const std::function<Expr(const Expr&)>& subst) {
  const bool mod4 =
      v->kind == ValueKind::Binary && v->op == Op::Mod && v->dtype == DType::I32 && is_number(v->args[1], 4);
  const Value& inner = mod4 ? v->args[0] : v;
  if (mod4) {
    if (auto r = widened(inner, DType::U8, combo, subst)) return std::pair{*r, 0};
  }
  if (inner->kind != ValueKind::Cast || inner->dtype != DType::I32) return std::nullopt;
  const Value& m = inner->args[0];
  if (m->kind != ValueKind::Binary || m->op != Op::Mul || m->dtype != DType::F32) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    const Value& c = m->args[static_cast<size_t>(i)];
    const Value& x = m->args[static_cast<size_t>(1 - i)];
    if (c->kind != ValueKind::Cast || c->dtype != DType::F32 || x->kind != ValueKind::Number) continue;
    for (int pair = 1; pair <= 3; ++pair) {
      if (x->number != std::ldexp(1.0, -2 * pair) || (pair < 3 && !mod4)) continue;
      if (auto r = byte_load(c->args[0], DType::U8, combo, subst)) return std::pair{*r, pair};
    }
  }
  return std::nullopt;
}

std::optional<ByteRead> unsigned_byte(const Value& v, const Combo& combo, const std::function<Expr(const Expr&)>& subst) {
  if (auto r = widened(v, DType::U8, combo, subst)) return r;
  // A six-bit quant: a nibble + 16 · a bit pair of other bytes, both read under one condition.
  if (v->kind == ValueKind::Binary && v->op == Op::Add && v->dtype == DType::I32) {
    for (int i = 0; i < 2; ++i) {
      const Value& t = v->args[static_cast<size_t>(1 - i)];
      if (t->kind != ValueKind::Binary || t->op != Op::Mul || t->dtype != DType::I32) continue;
      for (int j = 0; j < 2; ++j) {
        if (!is_number(t->args[static_cast<size_t>(1 - j)], 16)) continue;
        auto pair = bit_pair(t->args[static_cast<size_t>(j)], combo, subst);
        auto nibble = pair ? unsigned_byte(v->args[static_cast<size_t>(i)], combo, subst) : std::nullopt;
        if (!nibble || (nibble->form != ByteForm::Low && nibble->form != ByteForm::High) || nibble->pairs) continue;
        if (!(nibble->valid == pair->first.valid)) continue;
        nibble->pairs = PairRead{pair->first.buffer, pair->first.base, pair->second};
        return nibble;
      }
    }
  }
  if (v->kind == ValueKind::Binary && v->op == Op::Mod && v->dtype == DType::I32 && is_number(v->args[1], 16)) {
    if (auto r = widened(v->args[0], DType::U8, combo, subst)) return ByteRead{r->buffer, r->base, ByteForm::Low, r->valid};
  }
  if (v->kind == ValueKind::Binary && v->op == Op::Add && v->dtype == DType::I32) {
    for (int i = 0; i < 2; ++i) {
      if (!is_number(v->args[static_cast<size_t>(1 - i)], 128)) continue;
      if (auto r = widened(v->args[static_cast<size_t>(i)], DType::I8, combo, subst)) return ByteRead{r->buffer, r->base, ByteForm::Flip, r->valid};
    }
  }
  // i32(f32(byte) · 1/16): the high nibble (a float below 16, truncated)
  if (v->kind == ValueKind::Cast && v->dtype == DType::I32) {
    const Value& m = v->args[0];
    if (m->kind == ValueKind::Binary && m->op == Op::Mul && m->dtype == DType::F32) {
      for (int i = 0; i < 2; ++i) {
        if (!is_number(m->args[static_cast<size_t>(1 - i)], 0.0625)) continue;
        const Value& c = m->args[static_cast<size_t>(i)];
        if (c->kind != ValueKind::Cast || c->dtype != DType::F32) continue;
        if (auto r = byte_load(c->args[0], DType::U8, combo, subst)) return ByteRead{r->buffer, r->base, ByteForm::High, r->valid};
      }
    }
  }
  return std::nullopt;
}

struct Product {
  ByteRead u, s;
};

struct Group {
  ByteRead u, s;  // the reads of the group's first term found
  std::vector<int64_t> offsets;
};

}  // namespace

std::optional<Reg> KernelWriter::byte_dot(const Value& v, const Combo& combo, const std::string& pad, const std::string& into) {
  if (!combo.vector || v->kind != ValueKind::Binary || v->op != Op::Add || v->dtype != DType::I32) return std::nullopt;
  auto sub = [&](const Expr& e) { return subst(e, combo); };
  std::vector<Value> terms, others;
  std::function<void(const Value&)> flatten = [&](const Value& x) {
    if (x->kind == ValueKind::Binary && x->op == Op::Add && x->dtype == DType::I32 && !unsigned_byte(x, combo, sub)) {
      flatten(x->args[0]);
      flatten(x->args[1]);
    } else {
      terms.push_back(x);
    }
  };
  flatten(v);
  std::vector<Group> groups;
  for (const Value& t : terms) {
    std::optional<Product> p;
    if (t->kind == ValueKind::Binary && t->op == Op::Mul && t->dtype == DType::I32) {
      for (int i = 0; i < 2 && !p; ++i) {
        auto u = unsigned_byte(t->args[static_cast<size_t>(i)], combo, sub);
        auto s = u ? widened(t->args[static_cast<size_t>(1 - i)], DType::I8, combo, sub, true) : std::nullopt;
        if (u && s) p = Product{*u, *s};
      }
    }
    if (!p) {
      if (auto s = widened(t, DType::I8, combo, sub)) p = Product{ByteRead{-1, s->base, ByteForm::Ones, Expr(1)}, *s};
    }
    if (!p) {
      others.push_back(t);
      continue;
    }
    bool placed = false;
    for (Group& g : groups) {
      if (g.u.buffer != p->u.buffer || g.u.form != p->u.form || g.s.buffer != p->s.buffer || g.s.broadcast != p->s.broadcast) continue;
      if (g.u.pairs.has_value() != p->u.pairs.has_value()) continue;
      if (g.u.pairs && (g.u.pairs->buffer != p->u.pairs->buffer || g.u.pairs->pair != p->u.pairs->pair)) continue;
      Expr ds = simplify(p->s.base - g.s.base), du = p->u.form == ByteForm::Ones ? ds : simplify(p->u.base - g.u.base);
      if (!du.is_const() || !(du == ds) || std::abs(du.value()) > 3) continue;
      if (g.u.pairs && !(simplify(p->u.pairs->base - g.u.pairs->base) == du)) continue;
      // One mask for the group's four terms: each must read under the same condition.
      if (!(p->u.valid == g.u.valid) || !(p->s.valid == g.s.valid)) return std::nullopt;
      g.offsets.push_back(du.value());
      placed = true;
      break;
    }
    if (!placed) groups.push_back(Group{p->u, p->s, {0}});
  }
  if (groups.empty()) return std::nullopt;
  for (const Group& g : groups) {
    std::vector<int64_t> o = g.offsets;
    std::sort(o.begin(), o.end());
    if (o.size() != 4 || o[1] != o[0] + 1 || o[2] != o[0] + 2 || o[3] != o[0] + 3) return std::nullopt;
  }
  // A lane reads its four bytes or none: the group's terms share one condition (checked above),
  // a condition of the lane, written as an i32 lane mask.
  std::vector<std::string> masks;
  for (const Group& g : groups) {
    for (const ByteRead* r : {&g.u, &g.s}) {
      if (r->form == ByteForm::Ones || r->valid.is_const(1)) {
        masks.push_back("");
        continue;
      }
      auto m = mentions(r->valid, combo.vl) ? index_vector(r->valid, combo) : std::nullopt;
      if (!m) return std::nullopt;
      masks.push_back(*m);
    }
  }
  uses_vectors_ = true;
  // The other terms (an offset times the activation's byte sums) first: vpdpbusd then adds into
  // them instead of into zero and an add after (integer sums: the order changes nothing).
  std::optional<Reg> rest;
  for (const Value& o : others) {
    Reg r = splat(value(o, combo, pad), pad);
    rest = rest ? emit("lumen_i32v", rest->name + " + " + r.name, true, DType::I32, pad) : r;
  }
  // Into an accumulator (a block's integer sum): its vpdpbusd chain goes on from it.
  Reg acc = !into.empty() ? Reg{into, true, DType::I32} : rest ? *rest : emit("lumen_i32v", "lumen_splat_i32(0)", true, DType::I32, pad);
  if (!into.empty() && rest) acc = emit("lumen_i32v", into + " + " + rest->name, true, DType::I32, pad);
  size_t mask_at = 0;
  for (const Group& g : groups) {
    int64_t first = *std::min_element(g.offsets.begin(), g.offsets.end());
    auto load_at = [&](int buffer, const Expr& base, bool broadcast, const std::string& mask) {
      std::string at = "b" + std::to_string(buffer) + " + " + printer_.print(simplify(base + first));
      if (broadcast) return "lumen_splat_bytes4(" + at + ")";
      return mask.empty() ? "lumen_load_bytes(" + at + ")" : "lumen_maskload_i32((const int32_t*)(" + at + "), " + mask + ")";
    };
    auto load = [&](const ByteRead& r) { return load_at(r.buffer, r.base, r.broadcast, masks[mask_at++]); };
    const std::string& u_mask = masks[mask_at];
    std::string u = g.u.form == ByteForm::Ones ? (mask_at++, std::string("lumen_splat_i32(0x01010101)")) : load(g.u);
    switch (g.u.form) {
      case ByteForm::Low: u = "lumen_nibbles_low(" + u + ")"; break;
      case ByteForm::High: u = "lumen_nibbles_high(" + u + ")"; break;
      case ByteForm::Flip: u = "lumen_bytes_flip_sign(" + u + ")"; break;
      default: break;
    }
    if (g.u.pairs) {  // the same lanes' bytes of the bit pairs, under the nibbles' mask
      u = "(" + u + " | lumen_bit_pairs_high<" + std::to_string(g.u.pairs->pair) + ">(" +
          load_at(g.u.pairs->buffer, g.u.pairs->base, false, u_mask) + "))";
    }
    Reg ur = emit("lumen_i32v", u, true, DType::I32, pad);
    Reg sr = emit("lumen_i32v", load(g.s), true, DType::I32, pad);
    acc = emit("lumen_i32v", "lumen_dot4_u8i8(" + acc.name + ", " + ur.name + ", " + sr.name + ")", true, DType::I32, pad);
  }
  return acc;
}

std::optional<Reg> KernelWriter::repeated_load(const Value& v, const Combo& combo, const std::string& pad) {
  if (!combo.vector || v->kind != ValueKind::Load) return std::nullopt;
  if (v->dtype != DType::F32 && v->dtype != DType::F16) return std::nullopt;
  Expr valid = subst(v->valid, combo);
  Expr index = subst(v->index, combo);
  if (auto u = unclamp(index, combo.vl)) {  // a vector overhanging the end: the lanes past it read nothing
    index = u->index;
    valid = simplify(logical_and(valid, u->in_bounds));
  } else if (!valid.is_const(1)) {
    if (auto w = unwrap_overhang(index, valid, combo.vl)) index = *w;
  }
  std::optional<std::string> mask;
  if (!valid.is_const(1)) {
    mask = mentions(valid, combo.vl) ? index_vector(valid, combo) : std::nullopt;
    if (!mask) return std::nullopt;
  }
  int64_t c = kernel::lane_repeat(index, combo.vl, simd_);
  if (c == 0) return std::nullopt;
  std::unordered_map<Expr, Expr, ExprHash> at{{combo.vl, Expr(0)}};
  Expr base = simplify(substitute(index, at));
  uses_vectors_ = true;
  std::string f = v->dtype == DType::F32 ? "lumen_load_f32_rep" : "lumen_load_f16_rep";
  std::string at_base = "b" + std::to_string(v->buffer) + " + " + printer_.print(base);
  if (mask) return emit("lumen_f32v", f + "_masked<" + std::to_string(c) + ">(" + at_base + ", " + *mask + ")", true, v->dtype, pad);
  return emit("lumen_f32v", f + "<" + std::to_string(c) + ">(" + at_base + ")", true, v->dtype, pad);
}

}  // namespace lumen::cpu
