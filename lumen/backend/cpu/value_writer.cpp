// Values of a kernel as C++ temporaries: scalar code, SIMD vector code where
// a value varies across the SIMD lane, and a per-lane fallback for anything
// without a vector form.
#include <algorithm>
#include <functional>
#include <cmath>
#include <optional>

#include "lumen/backend/cpu/writer.h"
#include "lumen/core/error.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/linear_form.h"
#include "lumen/core/simplify.h"

namespace lumen::cpu {

using namespace lumen::kernel;

namespace {

std::string round_to(const std::string& expr, DType d) {
  if (d == DType::F16) return "lumen_round_f16(" + expr + ")";
  if (d == DType::BF16) return "lumen_round_bf16(" + expr + ")";
  return expr;
}

// Casts as the interpreter's convert_to: floats to integers truncate and
// saturate, integers narrow to i32 by wrapping, to 8 bits by saturating.
std::string scalar_cast(const std::string& a, DType from, DType to) {
  bool ff = is_float(from), ft = is_float(to);
  if (to == DType::Bool) return ff ? "(" + a + " != 0.0f)" : "(" + a + " != 0)";
  if (to == DType::F64) return from == DType::Bool ? "(" + a + " ? 1.0 : 0.0)" : "(double)" + a;
  if (ft) {
    std::string f = from == DType::Bool ? "(" + a + " ? 1.0f : 0.0f)" : (ff && from != DType::F64) ? a : "(float)" + a;
    return round_to(f, to);
  }
  if (to == DType::I8) return (ff ? "lumen_sat_i8f(" : "lumen_sat_i8(") + a + ")";
  if (to == DType::U8) return (ff ? "lumen_sat_u8f(" : "lumen_sat_u8(") + a + ")";
  if (to == DType::I64) return ff ? "lumen_f2l(" + a + ")" : "(int64_t)" + a;
  if (ff) return "lumen_f2i(" + a + ")";
  return "(int32_t)" + a;
}

// The C name of a unary primitive for a value held as float or as double.
std::string unary_call(Op op, const std::string& a, bool wide) {
  const char* f = wide ? "" : "f";
  switch (op) {
    case Op::Log2: return std::string("log2") + f + "(" + a + ")";
    case Op::Exp2: return std::string("exp2") + f + "(" + a + ")";
    case Op::Sin: return std::string("sin") + f + "(" + a + ")";
    case Op::Sqrt: return std::string("sqrt") + f + "(" + a + ")";
    default: return std::string(wide ? "(1.0 / " : "(1.0f / ") + a + ")";
  }
}

// Structural equality of two values (operands compared recursively).
bool same_value(const Value& a, const Value& b) {
  if (a == b) return true;
  if (a->kind != b->kind || a->dtype != b->dtype || a->op != b->op || a->buffer != b->buffer || a->acc != b->acc ||
      a->args.size() != b->args.size()) {
    return false;
  }
  if (a->kind == ValueKind::Number && !(a->number == b->number && std::signbit(a->number) == std::signbit(b->number))) return false;
  if (a->index.defined() != b->index.defined() || (a->index.defined() && !(a->index == b->index))) return false;
  if (a->valid.defined() != b->valid.defined() || (a->valid.defined() && !(a->valid == b->valid))) return false;
  for (size_t i = 0; i < a->args.size(); ++i) {
    if (!same_value(a->args[i], b->args[i])) return false;
  }
  return true;
}

// v is x * -1 (how the graph writes -x).
bool is_negation_of(const Value& v, const Value& x) {
  if (v->kind != ValueKind::Binary || v->op != Op::Mul) return false;
  for (int i = 0; i < 2; ++i) {
    const Value& k = v->args[static_cast<size_t>(i)];
    if (k->kind == ValueKind::Number && k->number == -1 && same_value(v->args[static_cast<size_t>(1 - i)], x)) return true;
  }
  return false;
}

bool is_plain_number(const Value& v) { return v->kind == ValueKind::Number && !std::isnan(v->number); }

// k when v is an integer Mod by the constant 2^k (k in 1..30).
std::optional<int> power_of_two_divisor(const Value& v) {
  const Value& b = v->args[1];
  if (is_float(v->dtype) || v->dtype == DType::I64 || b->kind != ValueKind::Number || b->number < 2 || b->number > (1 << 30)) {
    return std::nullopt;
  }
  auto c = static_cast<int64_t>(b->number);
  if (static_cast<double>(c) != b->number || (c & (c - 1)) != 0) return std::nullopt;
  int k = 0;
  while ((int64_t{1} << k) < c) ++k;
  return k;
}

// Bounds [lo, hi] every lane of a value lies in, where the value's parts make them known: bytes
// (a packed quant), loop indices, constants, and what sums, products, positive reciprocals,
// remainders of non-negative values and casts make of them (Q6_K's bits: floor(byte · 4^-c) % 4,
// 4^-c a reciprocal of a product of indices). Known bounds are finite: no NaN lies in them.
using Range = std::optional<std::pair<double, double>>;

// (Looked for within a few levels: values are shared DAGs, and bounds matter for short index-like chains.)
Range value_range(const Value& v, int depth = 10) {
  if (depth == 0) return std::nullopt;
  auto fits = [&](double lo, double hi) -> Range {
    if (!std::isfinite(lo) || !std::isfinite(hi)) return std::nullopt;
    if (!is_float(v->dtype) && (lo < -2147483648.0 || hi > 2147483647.0)) return std::nullopt;  // integers may wrap
    return std::pair{lo, hi};
  };
  switch (v->kind) {
    case ValueKind::Number: return fits(v->number, v->number);
    case ValueKind::Index: return fits(static_cast<double>(v->index.lo()), static_cast<double>(v->index.hi()));
    case ValueKind::Load:
      if (v->dtype == DType::U8) return std::pair{0.0, 255.0};
      if (v->dtype == DType::I8) return std::pair{-128.0, 127.0};
      if (v->dtype == DType::Bool) return std::pair{0.0, 1.0};
      return std::nullopt;
    case ValueKind::Cast: {
      // Casts to bytes saturate (lumen_sat_u8, lumen_sat_i8f, ...): their range whatever goes in.
      if (v->dtype == DType::Bool) return std::pair{0.0, 1.0};
      if (v->dtype == DType::U8) return std::pair{0.0, 255.0};
      if (v->dtype == DType::I8) return std::pair{-128.0, 127.0};
      Range a = value_range(v->args[0], depth - 1);
      if (!a) return std::nullopt;
      if (is_float(v->dtype)) return a;
      return fits(std::trunc(a->first), std::trunc(a->second));  // float -> integer truncates toward 0
    }
    case ValueKind::Unary: {
      Range a = value_range(v->args[0], depth - 1);
      if (!a) return std::nullopt;
      if (v->op == Op::Recip && a->first > 0) return fits(1 / a->second, 1 / a->first);
      if (v->op == Op::Exp2) return fits(std::exp2(a->first), std::exp2(a->second));
      return std::nullopt;
    }
    case ValueKind::Binary: {
      if (v->op == Op::LessThan) return std::pair{0.0, 1.0};
      Range a = value_range(v->args[0], depth - 1), b = value_range(v->args[1], depth - 1);
      if (!a || !b) return std::nullopt;
      if (v->op == Op::Add) return fits(a->first + b->first, a->second + b->second);
      if (v->op == Op::Mul) {
        double p[] = {a->first * b->first, a->first * b->second, a->second * b->first, a->second * b->second};
        return fits(*std::min_element(p, p + 4), *std::max_element(p, p + 4));
      }
      if (v->op == Op::Mod && a->first >= 0 && b->first == b->second && b->first > 0) {
        return fits(0, std::min(a->second, is_float(v->dtype) ? b->first : b->first - 1));
      }
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

bool never_negative(const Value& v) {
  Range r = value_range(v);
  return r && r->first >= 0;
}

}  // namespace

Expr KernelWriter::subst(const Expr& e, const Combo& combo) const {
  if (!e.defined() || combo.subst.empty()) return e;
  return simplify(substitute(e, combo.subst));
}

std::string KernelWriter::vtype(DType d) const { return is_float(d) ? "lumen_f32v" : "lumen_i32v"; }

Reg KernelWriter::emit(const std::string& type, const std::string& expr, bool vector, DType d, const std::string& pad) {
  std::string name = "v" + std::to_string(counter_++);
  out_ << pad << "const " << type << " " << name << " = " << expr << ";\n";
  return Reg{name, vector, d};
}

Reg KernelWriter::splat(const Reg& r, const std::string& pad) {
  if (r.vector) return r;
  std::string e = r.dtype == DType::Bool ? "lumen_splat_mask(" + r.name + ")"
                  : is_float(r.dtype)   ? "lumen_splat_f32(" + r.name + ")"
                                        : "lumen_splat_i32(" + r.name + ")";
  return emit(vtype(r.dtype), e, true, r.dtype, pad);
}

bool KernelWriter::varying(const Value& v, const Combo& combo) {
  if (!combo.vector) return false;
  auto key = std::make_pair(v.get(), combo.key);
  auto it = varying_cache_.find(key);
  if (it != varying_cache_.end()) return it->second;
  bool result = false;
  switch (v->kind) {
    case ValueKind::Number: break;
    case ValueKind::Index: result = mentions(subst(v->index, combo), combo.vl); break;
    case ValueKind::Load:
      result = mentions(subst(v->index, combo), combo.vl) || mentions(subst(v->valid, combo), combo.vl);
      break;
    case ValueKind::Acc: result = accs_.at(v->acc).vector; break;
    default:
      for (const Value& a : v->args) result = result || varying(a, combo);
      break;
  }
  varying_cache_[key] = result;
  return result;
}

bool mentions(const Expr& e, const Expr& var) {
  if (!e.defined() || !var.defined()) return false;
  auto vars = expr_vars(e);
  return std::find(vars.begin(), vars.end(), var) != vars.end();
}

// The coefficient of `var` if e = c·var + (terms without var); nothing otherwise.
std::optional<int64_t> lane_stride(const Expr& e, const Expr& var) {
  auto form = LinearForm::of(e);
  if (!form) return std::nullopt;
  int64_t coefficient = 0;
  for (const auto& [term, c] : form->terms) {
    if (term == var) {
      coefficient = c;
    } else if (mentions(term, var)) {
      return std::nullopt;
    }
  }
  return coefficient;
}

std::optional<Unclamped> unclamp(const Expr& index, const Expr& var) {
  Expr in_bounds = Expr(1);
  std::vector<Expr> clamps;
  std::function<Expr(const Expr&)> walk = [&](const Expr& e) -> Expr {
    if (!e.defined() || !mentions(e, var)) return e;
    if ((e.kind() == ExprKind::Min || e.kind() == ExprKind::Max) && mentions(e.a(), var) != mentions(e.b(), var)) {
      const Expr& x = mentions(e.a(), var) ? e.a() : e.b();
      const Expr& bound = mentions(e.a(), var) ? e.b() : e.a();
      // min(x, b): lanes past b read nothing; max(x, b) (a padded view's index clamped into
      // its mask, core/view.cpp): lanes before b read nothing.
      in_bounds = logical_and(in_bounds, e.kind() == ExprKind::Min ? lt(x, bound + 1) : lt(bound, x + 1));
      clamps.push_back(e);
      return walk(x);
    }
    switch (e.kind()) {
      case ExprKind::Add:
      case ExprKind::Mul: return make_binary(e.kind(), walk(e.a()), walk(e.b()));
      default: return e;
    }
  };
  Expr unclamped = simplify(walk(index));
  if (in_bounds.is_const(1) || unclamped == index) return std::nullopt;
  return Unclamped{unclamped, simplify(in_bounds), clamps};
}

Expr without_clamps(const Expr& e, const std::vector<Expr>& clamps, const Expr& var) {
  if (!e.defined() || !mentions(e, var)) return e;
  bool clamp = e.kind() == ExprKind::Min || e.kind() == ExprKind::Max;
  if (clamp && std::find(clamps.begin(), clamps.end(), e) != clamps.end()) {
    return without_clamps(mentions(e.a(), var) ? e.a() : e.b(), clamps, var);
  }
  switch (e.kind()) {
    case ExprKind::Const:
    case ExprKind::Var: return e;
    case ExprKind::Not: return make_not(without_clamps(e.a(), clamps, var));
    case ExprKind::Select:
      return make_select(without_clamps(e.a(), clamps, var), without_clamps(e.b(), clamps, var),
                         without_clamps(e.c(), clamps, var));
    default: return make_binary(e.kind(), without_clamps(e.a(), clamps, var), without_clamps(e.b(), clamps, var));
  }
}

Reg KernelWriter::value(const Value& v, const Combo& combo, const std::string& pad) {
  auto key = std::make_pair(v.get(), combo.key);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  // Masks that the lanes' constants decide (the nibble a lane of packed quants takes): the
  // select or the masked load is written as what it is in this combo.
  if (v->kind == ValueKind::Select && v->args[0]->kind == ValueKind::Index) {
    Expr c = subst(v->args[0]->index, combo);
    if (c.is_const()) return cache_[key] = value(v->args[c.value() != 0 ? 1 : 2], combo, pad);
  }
  if (v->kind == ValueKind::Load && subst(v->valid, combo).is_const(0)) {
    return cache_[key] = value(number(0, v->dtype), combo, pad);
  }
  Reg r = varying(v, combo) ? vector_value(v, combo, pad) : scalar_value(v, combo, pad);
  cache_[key] = r;
  return r;
}

Reg KernelWriter::scalar_value(const Value& v, const Combo& combo, const std::string& pad) {
  auto arg = [&](size_t i) { return value(v->args[i], combo, pad).name; };
  std::string expr;
  switch (v->kind) {
    case ValueKind::Number: return Reg{number_literal(v->number, v->dtype), false, v->dtype};
    case ValueKind::Acc: {
      const AccState& st = accs_.at(v->acc);
      std::string name = acc_name(v->acc, combo);
      if (st.partial) {  // combined right after its reduction loop
        if (st.combined.empty()) fail("cpu codegen: accumulator ", v->acc, " read before its loop ended (internal error)");
        return Reg{st.lane_vars.empty() ? st.combined : name + "_all", false, v->dtype};
      }
      if (st.vector) {  // one lane of a per-lane accumulator (the lane is fixed in this combo)
        int64_t lane = combo.subst.count(combo.vl) ? combo.subst.at(combo.vl).value() : 0;
        std::string element = name + "[" + std::to_string(lane) + "]";
        return Reg{st.dtype == DType::Bool ? "(" + element + " != 0)" : element, false, v->dtype};
      }
      return Reg{name, false, v->dtype};
    }
    case ValueKind::Index: {
      std::string i = printer_.print(subst(v->index, combo));
      expr = v->dtype == DType::Bool  ? "(" + i + " != 0)"
             : v->dtype == DType::F64 ? "(double)" + i
             : is_float(v->dtype)     ? round_to("(float)" + i, v->dtype)
             : v->dtype == DType::I64 ? "(int64_t)" + i
                                      : "(int32_t)" + i;
      break;
    }
    case ValueKind::Load: {
      std::string ref = "b" + std::to_string(v->buffer) + "[" + printer_.print(subst(v->index, combo)) + "]";
      std::string loaded = v->dtype == DType::F16    ? "lumen_f16_to_f32(" + ref + ")"
                           : v->dtype == DType::BF16 ? "lumen_bf16_to_f32(" + ref + ")"
                           : v->dtype == DType::Bool ? "(" + ref + " != 0)"
                                                     : ref;
      Expr valid = subst(v->valid, combo);
      expr = valid.is_const(1) ? loaded : "(" + printer_.print(valid) + " ? " + loaded + " : " + number_literal(0, v->dtype) + ")";
      break;
    }
    case ValueKind::Unary: {
      expr = round_to(unary_call(v->op, arg(0), v->dtype == DType::F64), v->dtype);
      break;
    }
    case ValueKind::Binary: {
      std::string a = arg(0), b = arg(1);
      DType d = v->args[0]->dtype;
      switch (v->op) {
        case Op::Add: expr = d == DType::Bool ? "(" + a + " | " + b + ")" : round_to("(" + a + " + " + b + ")", d); break;
        case Op::Mul: expr = d == DType::Bool ? "(" + a + " & " + b + ")" : round_to("(" + a + " * " + b + ")", d); break;
        case Op::Mod:
          expr = d == DType::F64   ? "fmod(" + a + ", " + b + ")"
                 : is_float(d)     ? round_to("fmodf(" + a + ", " + b + ")", d)
                 : d == DType::I64 ? "lumen_lmod(" + a + ", " + b + ")"
                                   : "lumen_imod(" + a + ", " + b + ")";
          break;
        default: expr = "(" + a + " < " + b + ")"; break;
      }
      break;
    }
    case ValueKind::Cast: expr = scalar_cast(arg(0), v->args[0]->dtype, v->dtype); break;
    case ValueKind::Select: expr = "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")"; break;
    case ValueKind::Max: {
      std::string a = arg(0), b = arg(1);
      expr = v->dtype == DType::F64   ? "lumen_maxd(" + a + ", " + b + ")"
             : is_float(v->dtype)     ? "lumen_maxf(" + a + ", " + b + ")"
             : v->dtype == DType::Bool ? "(" + a + " | " + b + ")"
             : v->dtype == DType::I64  ? "lumen_maxl(" + a + ", " + b + ")"
                                       : "lumen_maxi(" + a + ", " + b + ")";
      break;
    }
    case ValueKind::PairDot: expr = "(" + arg(0) + " * " + arg(1) + " + " + arg(2) + " * " + arg(3) + ")"; break;
  }
  return emit(value_type(v->dtype), expr, false, v->dtype, pad);
}

// Computes the value once per SIMD lane and packs the results.
Reg KernelWriter::lanewise(const Value& v, const Combo& combo, const std::string& pad) {
  std::vector<std::string> lanes;
  for (int l = 0; l < simd_; ++l) {
    Combo one = combo;
    one.subst[combo.vector_var] = Expr(combo.chunk_base + l);  // the lane, in terms of the IR variable
    one.subst[combo.vl] = Expr(l);
    one.vector = false;
    one.key = combo.key + "|" + std::to_string(l);
    std::string s = value(v, one, pad).name;
    lanes.push_back(v->dtype == DType::Bool ? "(" + s + " ? -1 : 0)" : s);
  }
  std::string e = vtype(v->dtype) + "{";
  for (size_t l = 0; l < lanes.size(); ++l) e += (l ? ", " : "") + lanes[l];
  return emit(vtype(v->dtype), e + "}", true, v->dtype, pad);
}

// Whether a load's lanes past an output row's end (the lowering's min(x, E - 1) on an output
// coordinate, unclamped) can read without a mask: the rest of its validity does not vary by
// lane, and every lane's element, past the end included, lies inside the buffer (its static
// size against the index's bounds over the loop ranges). Those lanes' values are never stored
// (the stores keep their masks), and a plain load is about half the cost of a masked one here
// (AMD Zen 4), and lets the compiler keep a row in registers from one tap row to the next.
bool KernelWriter::overhang_in_bounds(const Value& v, const Unclamped& u, const Expr& rest, const Combo& combo) const {
  const int64_t numel = kernel_.buffers.at(static_cast<size_t>(v->buffer)).numel;
  if (numel < 0 || mentions(rest, combo.vl)) return false;
  for (const Expr& c : u.clamps) {
    if (c.kind() != ExprKind::Min) return false;  // a padded view's max(x, 0): those lanes read zeros
  }
  auto at_lane = [&](int64_t lane) {
    std::unordered_map<Expr, Expr, ExprHash> at{{combo.vl, Expr(lane)}};
    return simplify(substitute(u.index, at));
  };
  return at_lane(0).lo() >= 0 && at_lane(simd_ - 1).hi() <= numel - 1;
}

std::optional<Reg> KernelWriter::strided_load(const Value& v, const Combo& combo, const std::string& pad) {
  if (!combo.vector || v->kind != ValueKind::Load || v->dtype != DType::F32) return std::nullopt;
  Expr index = subst(v->index, combo), valid = subst(v->valid, combo);
  if (auto u = unclamp(index, combo.vl)) {  // a vector overhanging the end: the lanes past it read nothing
    index = u->index;
    valid = simplify(logical_and(without_clamps(valid, u->clamps, combo.vl), u->in_bounds));
  }
  auto stride = lane_stride(index, combo.vl);
  if (!stride || (*stride < 2 && *stride != -1) || *stride > 1024) return std::nullopt;
  std::optional<std::string> mask;
  if (mentions(valid, combo.vl)) {
    mask = index_vector(valid, combo);
    if (!mask) return std::nullopt;
  }
  std::unordered_map<Expr, Expr, ExprHash> zero{{combo.vl, Expr(0)}};
  std::string at = "b" + std::to_string(v->buffer) + " + " + printer_.print(simplify(substitute(index, zero)));
  std::string s = std::to_string(*stride);
  uses_vectors_ = true;
  if (mask) {
    return emit("lumen_f32v", "lumen_maskload_f32_strided<" + s + ">(" + at + ", " + *mask + ")", true, v->dtype, pad);
  }
  std::string loaded = "lumen_load_f32_strided<" + s + ">(" + at + ")";
  if (!valid.is_const(1)) loaded = "(" + printer_.print(valid) + " ? " + loaded + " : lumen_splat_f32(0.0f))";
  return emit("lumen_f32v", loaded, true, v->dtype, pad);
}

namespace {

// A comparison or a logical combination: in lanes, a -1 / 0 mask.
bool is_condition(const Expr& e) {
  ExprKind k = e.kind();
  return k == ExprKind::Lt || k == ExprKind::Eq || k == ExprKind::And || k == ExprKind::Or || k == ExprKind::Not;
}

}  // namespace

// An integer index expression as a lumen_i32v expression over the SIMD lane:
// sums linear in the lane (base + k·lane), min / max of such, comparisons and
// logic of such (booleans are -1/0 masks). Nothing for other forms or values
// beyond int32.
std::optional<std::string> KernelWriter::index_vector(const Expr& e, const Combo& combo) const {
  const Expr& vl = combo.vl;
  // base + s·lane < b (or b < base + s·lane), b free of the lane: compared as s·lane against
  // b - base, worked out in 64 bits and clamped into i32 (a dynamic row's end past 2^31 is fine).
  if (e.kind() == ExprKind::Lt && mentions(e.a(), vl) != mentions(e.b(), vl)) {
    bool left = mentions(e.a(), vl);
    const Expr& walking = left ? e.a() : e.b();
    auto stride = lane_stride(walking, vl);
    if (stride && *stride > 0) {
      std::unordered_map<Expr, Expr, ExprHash> zero{{vl, Expr(0)}};
      Expr base = simplify(substitute(walking, zero));
      std::string gap = "lumen_clamp_lanes((int64_t)(" + printer_.print(left ? e.b() : e.a()) + ") - (int64_t)(" +
                        printer_.print(base) + "), " + std::to_string(*stride) + ")";
      std::string lanes = "(" + std::to_string(*stride) + " * lumen_iota_i32())";
      return left ? "((lumen_i32v)(" + lanes + " < lumen_splat_i32(" + gap + ")))"
                  : "((lumen_i32v)(lumen_splat_i32(" + gap + ") < " + lanes + "))";
    }
  }
  if (e.lo() < INT32_MIN || e.hi() > INT32_MAX) return std::nullopt;
  if (!mentions(e, vl)) {
    // A condition the lanes share is a mask too: -1 where true (AVX2's masked
    // loads test the sign bit, and ~ of a 1 would be true).
    bool condition = e.kind() == ExprKind::Lt || e.kind() == ExprKind::Eq || e.kind() == ExprKind::And ||
                     e.kind() == ExprKind::Or || e.kind() == ExprKind::Not;
    if (condition) return "lumen_splat_mask((bool)(" + printer_.print(e) + "))";
    return "lumen_splat_i32((int32_t)(" + printer_.print(e) + "))";
  }
  auto both = [&](const char* op) -> std::optional<std::string> {
    auto a = index_vector(e.a(), combo), b = index_vector(e.b(), combo);
    if (!a || !b) return std::nullopt;
    return "((lumen_i32v)(" + *a + op + *b + "))";
  };
  switch (e.kind()) {
    case ExprKind::Lt: return both(" < ");
    case ExprKind::Eq: return both(" == ");
    case ExprKind::And: return both(" & ");
    case ExprKind::Or: return both(" | ");
    case ExprKind::Not: {
      auto a = index_vector(e.a(), combo);
      if (!a) return std::nullopt;
      return "(~" + *a + ")";
    }
    case ExprKind::Min:
    case ExprKind::Max: {  // an output row's last index clamped (min(x, E - 1)) inside a padded read's mask
      // Of two conditions (-1 / 0 masks, where true is the smaller): and, or. Of a condition and a
      // number: no mask here (the number is no -1 / 0 mask).
      if (is_condition(e.a()) && is_condition(e.b())) return both(e.kind() == ExprKind::Min ? " & " : " | ");
      if (is_condition(e.a()) || is_condition(e.b())) return std::nullopt;
      auto a = index_vector(e.a(), combo), b = index_vector(e.b(), combo);
      if (!a || !b) return std::nullopt;
      const std::string& first = e.kind() == ExprKind::Min ? *a : *b;
      const std::string& second = e.kind() == ExprKind::Min ? *b : *a;
      return "((lumen_i32v)((" + *a + " < " + *b + ") ? " + first + " : " + second + "))";
    }
    default: break;
  }
  auto stride = lane_stride(e, vl);
  if (!stride) return std::nullopt;
  std::unordered_map<Expr, Expr, ExprHash> zero{{vl, Expr(0)}};
  Expr base = simplify(substitute(e, zero));
  if (base.lo() < INT32_MIN || base.hi() > INT32_MAX) return std::nullopt;
  return "(lumen_splat_i32((int32_t)(" + printer_.print(base) + ")) + " + std::to_string(*stride) + " * lumen_iota_i32())";
}

Reg KernelWriter::vector_value(const Value& v, const Combo& combo, const std::string& pad) {
  uses_vectors_ = true;
  bool half = v->dtype == DType::F16 || v->dtype == DType::BF16;
  // Half-precision loads widen exactly, and a widening cast is free: both stay vectors.
  if (half && v->kind == ValueKind::Load) {
    Expr index = subst(v->index, combo), valid = subst(v->valid, combo);
    auto stride = lane_stride(index, combo.vl);
    if (!(stride && *stride == 1)) {
      if (auto r = repeated_load(v, combo, pad)) return *r;
    }
    if (stride && *stride == 1 && !mentions(valid, combo.vl)) {
      std::unordered_map<Expr, Expr, ExprHash> zero{{combo.vl, Expr(0)}};
      std::string base = printer_.print(simplify(substitute(index, zero)));
      std::string loaded = std::string(v->dtype == DType::F16 ? "lumen_load_f16(" : "lumen_load_bf16(") + "b" +
                           std::to_string(v->buffer) + " + " + base + ")";
      if (!valid.is_const(1)) loaded = "(" + printer_.print(valid) + " ? " + loaded + " : lumen_splat_f32(0.0f))";
      return emit("lumen_f32v", loaded, true, v->dtype, pad);
    }
  }
  if (v->kind == ValueKind::Cast && v->dtype == DType::F32 &&
      (v->args[0]->dtype == DType::F16 || v->args[0]->dtype == DType::BF16)) {
    Reg a = splat(value(v->args[0], combo, pad), pad);
    return Reg{a.name, true, DType::F32};
  }
  // f32 rounded to a half type (the precision pass's operands): rounded in lanes.
  if (v->kind == ValueKind::Cast && half && v->args[0]->dtype == DType::F32) {
    Reg a = splat(value(v->args[0], combo, pad), pad);
    return emit("lumen_f32v", std::string(v->dtype == DType::BF16 ? "lumen_round_bf16v(" : "lumen_round_f16v(") + a.name + ")",
                true, v->dtype, pad);
  }
  bool wide = half;  // other half-precision values are rounded per op: per lane
  for (const Value& a : v->args) wide = wide || a->dtype == DType::F16 || a->dtype == DType::BF16;
  if (wide) return lanewise(v, combo, pad);
  auto vec = [&](size_t i) { return splat(value(v->args[i], combo, pad), pad).name; };
  std::string type = vtype(v->dtype);
  switch (v->kind) {
    case ValueKind::Acc: return Reg{acc_name(v->acc, combo), true, v->dtype};
    case ValueKind::Index: {  // affine in the lane (causal masks, iota): one vector expression
      Expr index = subst(v->index, combo);
      auto e = index_vector(index, combo);
      if (!e) return lanewise(v, combo, pad);
      if (is_condition(index) && v->dtype != DType::Bool) e = "(" + *e + " & 1)";  // a mask's -1 is the number 1
      if (v->dtype == DType::F32) return emit(type, "__builtin_convertvector(" + *e + ", lumen_f32v)", true, v->dtype, pad);
      if (v->dtype == DType::I32 || v->dtype == DType::Bool) return emit(type, *e, true, v->dtype, pad);
      return lanewise(v, combo, pad);
    }
    case ValueKind::Load: {
      Expr index = subst(v->index, combo), valid = subst(v->valid, combo);
      auto stride = lane_stride(index, combo.vl);
      if (!(stride && *stride == 1) && (v->dtype == DType::F32 || v->dtype == DType::I32)) {
        if (auto u = unclamp(index, combo.vl); u && lane_stride(u->index, combo.vl) == std::optional<int64_t>(1)) {
          index = u->index;  // lanes past the clamp are never stored: masked, or read where memory is
          Expr rest = without_clamps(valid, u->clamps, combo.vl);
          valid = simplify(overhang_in_bounds(v, *u, rest, combo) ? rest : logical_and(rest, u->in_bounds));
          stride = 1;
        } else if (auto w = unwrap_overhang(index, valid, combo.vl); w && lane_stride(*w, combo.vl) == std::optional<int64_t>(1)) {
          index = *w;  // a reduction's overhanging vector: masked lanes read nothing
          stride = 1;
        }
      }
      bool vector_load = v->dtype == DType::F32 || v->dtype == DType::I32 || is_storage_only(v->dtype);
      if (!(stride && *stride == 1)) {
        if (auto r = repeated_load(v, combo, pad)) return *r;
        if (auto r = strided_load(v, combo, pad)) return *r;
      }
      if (!vector_load || !stride || *stride != 1) return lanewise(v, combo, pad);
      std::unordered_map<Expr, Expr, ExprHash> zero{{combo.vl, Expr(0)}};
      std::string at = "b" + std::to_string(v->buffer) + " + " + printer_.print(simplify(substitute(index, zero)));
      if (mentions(valid, combo.vl)) {  // valid per lane (padding): a masked load
        auto mask = v->dtype == DType::F32 || v->dtype == DType::I32 ? index_vector(valid, combo) : std::nullopt;
        if (!mask) return lanewise(v, combo, pad);
        return emit(type, std::string(v->dtype == DType::F32 ? "lumen_maskload_f32(" : "lumen_maskload_i32(") + at + ", " + *mask + ")",
                    true, v->dtype, pad);
      }
      const char* load = v->dtype == DType::F32 ? "lumen_load_f32(" : v->dtype == DType::I8 ? "lumen_load_i8("
                         : v->dtype == DType::U8 ? "lumen_load_u8(" : "lumen_load_i32(";
      std::string loaded = load + at + ")";
      if (!valid.is_const(1)) {
        std::string zero_v = v->dtype == DType::F32 ? "lumen_splat_f32(0.0f)" : "lumen_splat_i32(0)";
        loaded = "(" + printer_.print(valid) + " ? " + loaded + " : " + zero_v + ")";
      }
      return emit(type, loaded, true, v->dtype, pad);
    }
    case ValueKind::Unary: {
      if (v->dtype != DType::F32) return lanewise(v, combo, pad);
      std::string a = vec(0);
      switch (v->op) {
        case Op::Log2: return emit(type, "lumen_log2v(" + a + ")", true, v->dtype, pad);
        case Op::Exp2: return emit(type, "lumen_exp2v(" + a + ")", true, v->dtype, pad);
        case Op::Sin: return emit(type, "lumen_sinv(" + a + ")", true, v->dtype, pad);
        case Op::Sqrt: return emit(type, "lumen_sqrtv(" + a + ")", true, v->dtype, pad);
        default: return emit(type, "lumen_splat_f32(1.0f) / " + a, true, v->dtype, pad);
      }
    }
    case ValueKind::Binary: {
      DType d = v->args[0]->dtype;
      if (auto r = byte_dot(v, combo, pad)) return *r;
      if (v->op == Op::Mod) {
        if (auto bits = power_of_two_divisor(v); bits && (d == DType::I32 || is_storage_only(d))) {
          // Truncated remainder by 2^k in lanes: |a| & (2^k - 1) with a's sign put back (exact for
          // every a, INT32_MIN included); the nibbles of packed 4-bit weights come out this way.
          Reg a = splat(value(v->args[0], combo, pad), pad);
          std::string mask = std::to_string((int64_t{1} << *bits) - 1);
          if (never_negative(v->args[0])) return emit("lumen_i32v", "(" + a.name + " & " + mask + ")", true, d, pad);
          Reg sign = emit("lumen_i32v", "(" + a.name + " >> 31)", true, d, pad);
          Reg low = emit("lumen_i32v", "(((" + a.name + " ^ " + sign.name + ") - " + sign.name + ") & " + mask + ")", true, d, pad);
          return emit("lumen_i32v", "((" + low.name + " ^ " + sign.name + ") - " + sign.name + ")", true, d, pad);
        }
        return lanewise(v, combo, pad);
      }
      std::string a = vec(0), b = vec(1);
      if (v->op == Op::LessThan) {
        if (d == DType::Bool) return emit("lumen_i32v", "(~" + a + ") & " + b, true, DType::Bool, pad);
        return emit("lumen_i32v", "(lumen_i32v)(" + a + " < " + b + ")", true, DType::Bool, pad);
      }
      if (d == DType::Bool) return emit(type, a + (v->op == Op::Add ? " | " : " & ") + b, true, d, pad);
      return emit(type, a + (v->op == Op::Add ? " + " : " * ") + b, true, d, pad);
    }
    case ValueKind::Cast: {
      DType from = v->args[0]->dtype, to = v->dtype;
      std::string a = vec(0);
      if (to == DType::Bool) {
        return emit(type, std::string("(lumen_i32v)(") + a + (is_float(from) ? " != 0.0f)" : " != 0)"), true, to, pad);
      }
      if (to == DType::F32) {
        if (from == DType::Bool) return emit(type, "(" + a + " != 0) ? lumen_splat_f32(1.0f) : lumen_splat_f32(0.0f)", true, to, pad);
        return emit(type, "__builtin_convertvector(" + a + ", lumen_f32v)", true, to, pad);
      }
      if (from == DType::Bool) return emit(type, a + " & 1", true, to, pad);
      if (to == DType::I32 && is_storage_only(from)) return Reg{a, true, to};  // already widened on load
      if (from == DType::F32 && to == DType::I32) {
        // A value known to lie well inside i32's range (no NaN, nothing to saturate) converts as it is.
        Range r = value_range(v->args[0]);
        if (r && r->first > -2147483520.0 && r->second < 2147483520.0) {
          return emit(type, "__builtin_convertvector(" + a + ", lumen_i32v)", true, to, pad);
        }
        return emit(type, "lumen_f2iv(" + a + ")", true, to, pad);
      }
      if (from == DType::F32 && to == DType::I8) return emit(type, "lumen_sat_i8v(lumen_f2iv(" + a + "))", true, to, pad);
      return lanewise(v, combo, pad);
    }
    case ValueKind::Select: {
      Reg c = value(v->args[0], combo, pad);
      std::string a = vec(1), b = vec(2);
      std::string cond = c.vector ? "(" + c.name + " != 0)" : c.name;
      return emit(type, "(" + cond + " ? " + a + " : " + b + ")", true, v->dtype, pad);
    }
    case ValueKind::Max: {
      if (v->dtype == DType::F32) {
        // max(x, -x) is |x| (one AND); max with a number keeps x's NaN with one vmaxps.
        for (int i = 0; i < 2; ++i) {
          if (is_negation_of(v->args[1 - i], v->args[i])) return emit(type, "lumen_absv(" + vec(i) + ")", true, v->dtype, pad);
          if (is_plain_number(v->args[1 - i])) {
            return emit(type, "lumen_max_numberv(" + vec(i) + ", " + vec(1 - i) + ")", true, v->dtype, pad);
          }
        }
      }
      std::string a = vec(0), b = vec(1);
      if (v->dtype == DType::Bool) return emit(type, a + " | " + b, true, v->dtype, pad);
      return emit(type, std::string(is_float(v->dtype) ? "lumen_maxv(" : "lumen_maxv_i32(") + a + ", " + b + ")", true,
                  v->dtype, pad);
    }
    case ValueKind::PairDot: return emit(type, vec(0) + " * " + vec(1) + " + " + vec(2) + " * " + vec(3), true, v->dtype, pad);
    default: return lanewise(v, combo, pad);
  }
}

namespace {

// The bf16 value an f32 value widens, if it is one: Cast(f32) of a bf16 value.
Value widened_bf16(const Value& v) {
  if (v->kind == ValueKind::Cast && v->dtype == DType::F32 && v->args[0]->dtype == DType::BF16) return v->args[0];
  return nullptr;
}

}  // namespace

// A PairDot as one vdpbf16ps (lumen_dot_bf16_pairs) on SIMD lanes: one side's
// two values are the same for every lane (A's pair, broadcast as one 32-bit
// lane), the other side's are bf16 loads of interleaved pairs (B's panel:
// element k of lane l at 2·l + k). Nothing when the value has another form;
// the caller then writes the plain f32 sum.
std::optional<std::pair<std::string, std::string>> KernelWriter::bf16_pairs(const Value& v, const Combo& combo,
                                                                           const std::string& pad) {
  if (simd_ != 16 || v->kind != ValueKind::PairDot) return std::nullopt;
  // args: a0, b0, a1, b1. The broadcast side is the one that does not vary.
  int broadcast = !varying(v->args[0], combo) && !varying(v->args[2], combo) ? 0
                  : !varying(v->args[1], combo) && !varying(v->args[3], combo) ? 1
                                                                                 : -1;
  if (broadcast < 0) return std::nullopt;
  const Value& lane0 = v->args[static_cast<size_t>(1 - broadcast)];
  const Value& lane1 = v->args[static_cast<size_t>(3 - broadcast)];
  Value l0 = widened_bf16(lane0), l1 = widened_bf16(lane1);
  if (!l0 || !l1 || l0->kind != ValueKind::Load || l1->kind != ValueKind::Load || l0->buffer != l1->buffer) return std::nullopt;
  Expr i0 = subst(l0->index, combo), i1 = subst(l1->index, combo);
  if (!subst(l0->valid, combo).is_const(1) || !subst(l1->valid, combo).is_const(1)) return std::nullopt;
  if (lane_stride(i0, combo.vl) != std::optional<int64_t>(2) || !simplify(i1 - i0).is_const(1)) return std::nullopt;
  std::unordered_map<Expr, Expr, ExprHash> zero{{combo.vl, Expr(0)}};
  Reg panel = emit("lumen_i32v", "lumen_load_bf16_pairs(b" + std::to_string(l0->buffer) + " + " +
                                     printer_.print(simplify(substitute(i0, zero))) + ")", true, DType::I32, pad);
  // The broadcast pair: read as one 32-bit value where it is two neighbouring bf16 elements.
  const Value& even = v->args[static_cast<size_t>(broadcast)];
  const Value& odd = v->args[static_cast<size_t>(2 + broadcast)];
  Value e = widened_bf16(even), o = widened_bf16(odd);
  std::string pair;
  if (e && o && e->kind == ValueKind::Load && o->kind == ValueKind::Load && e->buffer == o->buffer &&
      subst(e->valid, combo).is_const(1) && subst(o->valid, combo).is_const(1) &&
      simplify(subst(o->index, combo) - subst(e->index, combo)).is_const(1)) {
    pair = "lumen_bf16_pair_at(b" + std::to_string(e->buffer) + " + " + printer_.print(subst(e->index, combo)) + ")";
  } else {
    pair = "lumen_bf16_pair_of(" + value(even, combo, pad).name + ", " + value(odd, combo, pad).name + ")";
  }
  Reg a = emit("lumen_i32v", pair, true, DType::I32, pad);
  return std::make_pair(a.name, panel.name);
}

}  // namespace lumen::cpu
