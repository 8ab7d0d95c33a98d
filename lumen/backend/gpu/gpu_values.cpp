#include "lumen/backend/gpu/gpu_values.h"

#include <cmath>
#include <cstdio>

#include "lumen/core/error.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/simplify.h"

namespace lumen::gpu {

using namespace lumen::kernel;

std::string identifier(const std::string& name) {
  std::string out;
  for (char ch : name) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return out;
}

std::string storage_type(DType d, const Dialect& dialect) {
  switch (d) {
    case DType::F32: return "float";
    case DType::F16:
    case DType::BF16: return dialect.u16;
    case DType::I32: return "int";
    case DType::Bool:
    case DType::U8: return dialect.u8;
    case DType::I8: return dialect.i8;
    case DType::I64: return dialect.i64;
    case DType::F64: return "double";  // OpenCL: needs cl_khr_fp64 (the prelude enables it where the device has it)
  }
  fail("gpu printer: no storage type for ", dtype_name(d), " (internal error)");
}

const char* value_type(DType d) {
  if (d == DType::F64) return "double";
  if (d == DType::I64) return "lm_i64";
  if (is_float(d)) return "float";
  return d == DType::Bool ? "bool" : "int";
}

namespace {

std::string number_literal(double v, DType d, const Dialect& dialect) {
  if (d == DType::Bool) return v != 0 ? "true" : "false";
  if (d == DType::I64) {
    int64_t i = saturate_to_i64(v);
    if (i == INT64_MIN) return "(-9223372036854775807" + dialect.i64_suffix + " - 1)";
    return "((lm_i64)" + std::to_string(i) + dialect.i64_suffix + ")";
  }
  if (!is_float(d)) return "(int)" + std::to_string(static_cast<int64_t>(saturate_to(d, v)));
  bool wide = d == DType::F64;
  double r = round_to_dtype(v, d);
  if (std::isnan(r)) return wide ? "((double)LM_NAN)" : "LM_NAN";
  if (std::isinf(r)) return std::string(r > 0 ? "(" : "(-") + (wide ? "(double)LM_INF)" : "LM_INF)");
  char buf[64];
  std::snprintf(buf, sizeof buf, wide ? "%.17g" : "%.9g", r);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return "(" + s + (wide ? ")" : "f)");
}

std::string round_to(const std::string& e, DType d) {
  if (d == DType::F16) return "lm_round_f16(" + e + ")";
  if (d == DType::BF16) return "lm_round_bf16(" + e + ")";
  return e;
}

// Casts as the interpreter's convert_to (and the CPU backend's): floats to
// integers truncate and saturate, integers narrow to i32 by wrapping, to 8
// bits by saturating.
std::string cast_expr(const std::string& a, DType from, DType to) {
  bool ff = is_float(from), ft = is_float(to), wide = from == DType::F64;
  if (to == DType::Bool) return ff ? "(" + a + " != 0.0f)" : "(" + a + " != 0)";
  if (to == DType::F64) return from == DType::Bool ? "(" + a + " ? 1.0 : 0.0)" : "(double)(" + a + ")";
  if (ft) return round_to(from == DType::Bool ? "(" + a + " ? 1.0f : 0.0f)" : "(float)(" + a + ")", to);
  if (to == DType::I8) return ff ? (wide ? "lm_sat_i8f((float)lm_clampd(" : "lm_sat_i8f((") + a + "))" : "lm_sat_i8((lm_i64)(" + a + "))";
  if (to == DType::U8) return ff ? (wide ? "lm_sat_u8f((float)lm_clampd(" : "lm_sat_u8f((") + a + "))" : "lm_sat_u8((lm_i64)(" + a + "))";
  if (to == DType::I64) return ff ? (wide ? "lm_d2l(" : "lm_f2l(") + a + ")" : "(lm_i64)(" + a + ")";
  if (ff) return (wide ? "lm_d2i(" : "lm_f2i(") + a + ")";
  return "(int)(" + a + ")";
}

std::string max_call(DType d) {
  switch (d) {
    case DType::F64: return "lm_maxd";
    case DType::I64: return "lm_maxl";
    default: return is_float(d) ? "lm_maxf" : "lm_maxi";
  }
}

std::string combine_expr(const std::string& acc, const std::string& v, DType d, Combine c) {
  if (d == DType::Bool) return acc + " | " + v;
  if (c == Combine::Sum) return acc + " + " + v;
  return max_call(d) + "(" + acc + ", " + v + ")";
}

// The unary primitives on float (f32 and the 16-bit types computed in f32) or on double.
std::string unary_call(Op op, const std::string& a, bool wide) {
  const char* d = wide ? "d" : "";
  switch (op) {
    case Op::Log2: return std::string("lm_log2") + d + "(" + a + ")";
    case Op::Exp2: return std::string("lm_exp2") + d + "(" + a + ")";
    case Op::Sin: return std::string("lm_sin") + d + "(" + a + ")";
    case Op::Sqrt: return std::string("lm_sqrt") + d + "(" + a + ")";
    default: return std::string(wide ? "(1.0 / " : "(1.0f / ") + a + ")";
  }
}

}  // namespace

ValueWriter::ValueWriter(const Kernel& k, const Dialect& d, std::ostringstream& out) : kernel_(k), d_(d), out_(out) {
  for (const std::string& name : k.dims) dims_[name] = "d_" + identifier(name);
}

std::string ValueWriter::expr(const Expr& e) const {
  auto p = [&](const Expr& x) { return expr(x); };
  switch (e.kind()) {
    case ExprKind::Const: {
      std::string v = std::to_string(e.value()) + d_.i64_suffix;
      return e.value() < 0 ? "(" + v + ")" : v;
    }
    case ExprKind::Var: {
      auto it = dims_.find(e.name());
      if (it != dims_.end() && e.lo() == 0) return it->second;  // a dim, bounded or not (a chunk origin is)
      return identifier(e.name());
    }
    case ExprKind::Add: return "(" + p(e.a()) + " + " + p(e.b()) + ")";
    case ExprKind::Mul: return "(" + p(e.a()) + " * " + p(e.b()) + ")";
    case ExprKind::Div:
      if (e.a().lo() >= 0 && e.b().lo() > 0) return "(" + p(e.a()) + " / " + p(e.b()) + ")";
      return "lm_floordiv(" + p(e.a()) + ", " + p(e.b()) + ")";
    case ExprKind::Mod:
      if (e.a().lo() >= 0 && e.b().lo() > 0) return "(" + p(e.a()) + " % " + p(e.b()) + ")";
      return "lm_floormod(" + p(e.a()) + ", " + p(e.b()) + ")";
    case ExprKind::Min: return "lm_min(" + p(e.a()) + ", " + p(e.b()) + ")";
    case ExprKind::Max: return "lm_max(" + p(e.a()) + ", " + p(e.b()) + ")";
    case ExprKind::Lt: return "(" + d_.i64 + ")(" + p(e.a()) + " < " + p(e.b()) + ")";
    case ExprKind::Eq: return "(" + d_.i64 + ")(" + p(e.a()) + " == " + p(e.b()) + ")";
    case ExprKind::And: return "(" + d_.i64 + ")(" + p(e.a()) + " && " + p(e.b()) + ")";
    case ExprKind::Or: return "(" + d_.i64 + ")(" + p(e.a()) + " || " + p(e.b()) + ")";
    case ExprKind::Not: return "(" + d_.i64 + ")(!" + p(e.a()) + ")";
    case ExprKind::Select: return "(" + p(e.a()) + " ? " + p(e.b()) + " : " + p(e.c()) + ")";
  }
  return "?";
}

Expr ValueWriter::substituted(const Expr& e) const {
  if (!e.defined() || subst_.empty()) return e;
  return simplify(substitute(e, subst_));
}

void ValueWriter::push_lane(const Expr& var, int64_t extent) {
  lane_vars_.push_back(var);
  lane_extents_.push_back(extent);
  at_.push_back(0);
}

void ValueWriter::pop_lane() {
  lane_vars_.pop_back();
  lane_extents_.pop_back();
  at_.pop_back();
  set_combo(0);
}

std::vector<Expr> ValueWriter::lane_vars() const { return lane_vars_; }

int64_t ValueWriter::combo_count() const {
  int64_t n = 1;
  for (int64_t e : lane_extents_) n *= e;
  return n;
}

void ValueWriter::set_combo(int64_t combo) {
  subst_.clear();
  for (size_t i = lane_vars_.size(); i-- > 0;) {
    at_[i] = combo % lane_extents_[i];
    combo /= lane_extents_[i];
    subst_[lane_vars_[i]] = Expr(at_[i]);
  }
  cache_.clear();
}

const AccInfo& ValueWriter::acc(int id) const {
  auto it = accs_.find(id);
  if (it == accs_.end()) fail("gpu printer: accumulator ", id, " used before it is declared (internal error)");
  return it->second;
}

std::string ValueWriter::acc_name(int id) const {
  std::string name = "acc" + std::to_string(id);
  for (size_t i = 0; i < acc(id).lane_depth; ++i) name += "_" + std::to_string(at_[i]);
  return name;
}

void ValueWriter::declare_acc(const Stmt& s, const std::string& pad) {
  accs_[s.acc] = AccInfo{s.dtype, s.combine, lane_vars_.size()};
  std::string identity = s.combine == Combine::Sum ? number_literal(0, s.dtype, d_)
                         : s.dtype == DType::F64  ? "(-(double)LM_INF)"
                         : is_float(s.dtype)      ? "(-LM_INF)"
                         : s.dtype == DType::Bool ? "false"
                         : s.dtype == DType::I64  ? "(-9223372036854775807" + d_.i64_suffix + " - 1)"
                                                  : "(-2147483647 - 1)";
  out_ << pad << value_type(s.dtype) << " " << acc_name(s.acc) << " = " << identity << ";\n";
}

void ValueWriter::update_acc(const Stmt& s, const std::string& pad) {
  std::string v = value(s.value, pad);
  std::string a = acc_name(s.acc);
  out_ << pad << a << " = " << combine_expr(a, v, acc(s.acc).dtype, s.combine) << ";\n";
}

void ValueWriter::store(const Stmt& s, const std::string& pad) {
  DType storage = kernel_.buffers.at(static_cast<size_t>(s.buffer)).dtype;
  std::string v = value(s.value, pad);
  std::string converted = storage == DType::F16    ? "lm_f32_to_f16(" + v + ")"
                          : storage == DType::BF16 ? "lm_f32_to_bf16(" + v + ")"
                          : storage == DType::Bool || storage == DType::I8 || storage == DType::U8
                              ? "(" + storage_type(storage, d_) + ")(" + v + ")"
                              : v;
  out_ << pad << "b" << s.buffer << "[" << expr(substituted(s.index)) << "] = " << converted << ";\n";
}

void ValueWriter::bind(const Stmt& s, const std::string& pad) {
  std::string g = expr(s.var), bound = expr(substituted(s.bound));
  out_ << pad << d_.i64 << " " << g << " = 0;\n";
  out_ << pad << "if (" << (s.guard.defined() ? expr(substituted(s.guard)) : std::string("1")) << ") {\n";
  std::string v = value(s.value, pad + "  ");
  out_ << pad << "  " << g << " = (" << d_.i64 << ")(" << v << ");\n";
  out_ << pad << "  if (" << g << " < 0 || " << g << " >= " << bound << ") { lm_fail(lm_status, " << g << ", " << bound
       << "); " << g << " = 0; }\n";
  out_ << pad << "}\n";
  cache_.clear();  // temporaries inside the braces are out of scope
}

std::string ValueWriter::value(const Value& v, const std::string& pad) {
  auto it = cache_.find(v.get());
  if (it != cache_.end()) return it->second;
  std::string text = compute(v, pad);
  if (v->kind != ValueKind::Number && v->kind != ValueKind::Acc) {
    std::string name = "v" + std::to_string(counter_++);
    out_ << pad << "const " << value_type(v->dtype) << " " << name << " = " << text << ";\n";
    text = name;
  }
  cache_[v.get()] = text;
  return text;
}

std::string ValueWriter::load(const Value& v) {
  if (staging_) {
    auto it = staging_->reads.find(v.get());
    if (it != staging_->reads.end()) {
      const StagedTile& t = staging_->tiles[static_cast<size_t>(it->second)];
      return t.name + "[" + expr(substituted(t.offset)) + "]";
    }
  }
  return load_text(v, substituted(v->index), substituted(v->valid));
}

std::string ValueWriter::fill_value(const Value& load) const { return load_text(load, load->index, load->valid); }

std::string ValueWriter::load_text(const Value& v, const Expr& index, const Expr& valid) const {
  std::string ref = "b" + std::to_string(v->buffer) + "[" + expr(index) + "]";
  DType d = kernel_.buffers.at(static_cast<size_t>(v->buffer)).dtype;
  std::string loaded = d == DType::F16    ? "lm_f16_to_f32(" + ref + ")"
                       : d == DType::BF16 ? "lm_bf16_to_f32(" + ref + ")"
                       : d == DType::Bool ? "(" + ref + " != 0)"
                       : d == DType::I8 || d == DType::U8 ? "(int)" + ref
                                                          : ref;
  if (!valid.defined() || valid.is_const(1)) return loaded;
  return "(" + expr(valid) + " ? " + loaded + " : " + number_literal(0, v->dtype, d_) + ")";
}

std::string ValueWriter::compute(const Value& v, const std::string& pad) {
  auto arg = [&](size_t i) { return value(v->args[i], pad); };
  switch (v->kind) {
    case ValueKind::Number: return number_literal(v->number, v->dtype, d_);
    case ValueKind::Acc: return acc_name(v->acc);
    case ValueKind::Index: {
      std::string i = expr(substituted(v->index));
      if (v->dtype == DType::Bool) return "(" + i + " != 0)";
      if (v->dtype == DType::F64) return "(double)" + i;
      if (v->dtype == DType::I64) return "(lm_i64)" + i;
      return is_float(v->dtype) ? round_to("(float)" + i, v->dtype) : "(int)" + i;
    }
    case ValueKind::Load: return load(v);
    case ValueKind::Unary: {
      std::string a = arg(0);
      return round_to(unary_call(v->op, a, v->dtype == DType::F64), v->dtype);
    }
    case ValueKind::Binary: {
      std::string a = arg(0), b = arg(1);
      DType d = v->args[0]->dtype;
      switch (v->op) {
        case Op::Add: return d == DType::Bool ? "(" + a + " | " + b + ")" : round_to("(" + a + " + " + b + ")", d);
        case Op::Mul: return d == DType::Bool ? "(" + a + " & " + b + ")" : round_to("(" + a + " * " + b + ")", d);
        case Op::Mod:
          if (d == DType::F64) return "lm_fmodd(" + a + ", " + b + ")";
          if (d == DType::I64) return "lm_lmod(" + a + ", " + b + ")";
          return is_float(d) ? round_to("lm_fmod(" + a + ", " + b + ")", d) : "lm_imod(" + a + ", " + b + ")";
        default: return "(" + a + " < " + b + ")";
      }
    }
    case ValueKind::Cast: return cast_expr(arg(0), v->args[0]->dtype, v->dtype);
    case ValueKind::Select: return "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
    case ValueKind::Max: {
      std::string a = arg(0), b = arg(1);
      if (v->dtype == DType::Bool) return "(" + a + " | " + b + ")";
      return max_call(v->dtype) + "(" + a + ", " + b + ")";
    }
    case ValueKind::PairDot: return "(" + arg(0) + " * " + arg(1) + " + " + arg(2) + " * " + arg(3) + ")";
  }
  return "?";
}

}  // namespace lumen::gpu
