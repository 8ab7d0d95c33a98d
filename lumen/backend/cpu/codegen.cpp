#include "lumen/backend/cpu/codegen.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "lumen/backend/cpu/codegen_util.h"
#include "lumen/backend/cpu/lanes.h"
#include "lumen/backend/cpu/prelude.h"
#include "lumen/core/error.h"

namespace lumen::cpu {

using namespace lumen::kernel;

namespace {

const char* storage_type(DType d) {
  switch (d) {
    case DType::F32: return "float";
    case DType::F16:
    case DType::BF16: return "uint16_t";
    case DType::I32: return "int32_t";
    case DType::Bool: return "uint8_t";
  }
  return "?";
}

}  // namespace

const char* value_type(DType d) {
  switch (d) {
    case DType::F32:
    case DType::F16:
    case DType::BF16: return "float";
    case DType::I32: return "int32_t";
    case DType::Bool: return "bool";
  }
  return "?";
}

std::string c_identifier(const std::string& name) {
  std::string out;
  for (char ch : name) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return out;
}

std::string number_literal(double v, DType d) {
  if (d == DType::Bool) return v != 0 ? "true" : "false";
  if (d == DType::I32) return "(int32_t)" + std::to_string(static_cast<int64_t>(v));
  double r = round_to_dtype(v, d);
  if (std::isnan(r)) return "NAN";
  if (std::isinf(r)) return r > 0 ? "INFINITY" : "-INFINITY";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9gf", r);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s.insert(s.size() - 1, ".0");
  return s;
}

// ---- index expressions ----------------------------------------------------------

ExprPrinter::ExprPrinter(const std::vector<std::string>& dims) {
  for (size_t i = 0; i < dims.size(); ++i) dim_names_[dims[i]] = "d_" + c_identifier(dims[i]);
}

std::string ExprPrinter::var_name(const Expr& v) const {
  auto it = dim_names_.find(v.name());
  if (it != dim_names_.end() && v.lo() == 0 && v.hi() == kMaxDim) return it->second;
  return c_identifier(v.name());
}

std::string ExprPrinter::print(const Expr& e) const {
  switch (e.kind()) {
    case ExprKind::Const: return e.value() < 0 ? "(" + std::to_string(e.value()) + "LL)" : std::to_string(e.value()) + "LL";
    case ExprKind::Var: return var_name(e);
    case ExprKind::Add: return "(" + print(e.a()) + " + " + print(e.b()) + ")";
    case ExprKind::Mul: return "(" + print(e.a()) + " * " + print(e.b()) + ")";
    case ExprKind::Div:
      if (e.a().lo() >= 0 && e.b().lo() > 0) return "(" + print(e.a()) + " / " + print(e.b()) + ")";
      return "lumen_floordiv(" + print(e.a()) + ", " + print(e.b()) + ")";
    case ExprKind::Mod:
      if (e.a().lo() >= 0 && e.b().lo() > 0) return "(" + print(e.a()) + " % " + print(e.b()) + ")";
      return "lumen_floormod(" + print(e.a()) + ", " + print(e.b()) + ")";
    case ExprKind::Min: return "lumen_min(" + print(e.a()) + ", " + print(e.b()) + ")";
    case ExprKind::Max: return "lumen_max(" + print(e.a()) + ", " + print(e.b()) + ")";
    case ExprKind::Lt: return "(int64_t)(" + print(e.a()) + " < " + print(e.b()) + ")";
    case ExprKind::Eq: return "(int64_t)(" + print(e.a()) + " == " + print(e.b()) + ")";
    case ExprKind::And: return "(int64_t)(" + print(e.a()) + " && " + print(e.b()) + ")";
    case ExprKind::Or: return "(int64_t)(" + print(e.a()) + " || " + print(e.b()) + ")";
    case ExprKind::Not: return "(int64_t)(!" + print(e.a()) + ")";
    case ExprKind::Select: return "(" + print(e.a()) + " ? " + print(e.b()) + " : " + print(e.c()) + ")";
  }
  return "?";
}

// ---- scalar values -------------------------------------------------------------------

ScalarEmitter::ScalarEmitter(const Kernel& k, const ExprPrinter& printer, std::ostream& out, std::string pad,
                             int* counter)
    : kernel_(k), printer_(printer), out_(out), pad_(std::move(pad)), counter_(counter) {}

std::string ScalarEmitter::round(const std::string& expr, DType d) {
  if (d == DType::F16) return "lumen_round_f16(" + expr + ")";
  if (d == DType::BF16) return "lumen_round_bf16(" + expr + ")";
  return expr;
}

std::string ScalarEmitter::load_expr(const Value& v) {
  std::string ref = "b" + std::to_string(v->buffer) + "[" + printer_.print(v->index) + "]";
  std::string value;
  switch (v->dtype) {
    case DType::F16: value = "lumen_f16_to_f32(" + ref + ")"; break;
    case DType::BF16: value = "lumen_bf16_to_f32(" + ref + ")"; break;
    case DType::Bool: value = "(" + ref + " != 0)"; break;
    default: value = ref; break;
  }
  if (v->valid.is_const(1)) return value;
  return "(" + printer_.print(v->valid) + " ? " + value + " : " + number_literal(0, v->dtype) + ")";
}

std::string ScalarEmitter::cast_expr(const std::string& a, DType from, DType to) {
  bool ff = is_float(from), ft = is_float(to);
  if (to == DType::Bool) return ff ? "(" + a + " != 0.0f)" : "(" + a + " != 0)";
  if (ft) {
    std::string f = from == DType::Bool ? "(" + a + " ? 1.0f : 0.0f)" : ff ? a : "(float)" + a;
    return round(f, to);
  }
  // to i32
  if (ff) return "lumen_f2i(" + a + ")";
  return "(int32_t)" + a;
}

std::string ScalarEmitter::emit(const Value& v) {
  auto it = names_.find(v.get());
  if (it != names_.end()) return it->second;
  std::string expr;
  auto arg = [&](size_t i) { return emit(v->args[i]); };
  switch (v->kind) {
    case ValueKind::Number: return number_literal(v->number, v->dtype);
    case ValueKind::Acc: return "acc" + std::to_string(v->acc);
    case ValueKind::Index: {
      std::string i = printer_.print(v->index);
      expr = v->dtype == DType::Bool ? "(" + i + " != 0)" : is_float(v->dtype) ? round("(float)" + i, v->dtype) : "(int32_t)" + i;
      break;
    }
    case ValueKind::Load: expr = load_expr(v); break;
    case ValueKind::Unary: {
      std::string a = arg(0);
      switch (v->op) {
        case Op::Log2: expr = "log2f(" + a + ")"; break;
        case Op::Exp2: expr = "exp2f(" + a + ")"; break;
        case Op::Sin: expr = "sinf(" + a + ")"; break;
        case Op::Sqrt: expr = "sqrtf(" + a + ")"; break;
        default: expr = "(1.0f / " + a + ")"; break;
      }
      expr = round(expr, v->dtype);
      break;
    }
    case ValueKind::Binary: {
      std::string a = arg(0), b = arg(1);
      DType d = v->args[0]->dtype;
      switch (v->op) {
        case Op::Add: expr = d == DType::Bool ? "(" + a + " | " + b + ")" : round("(" + a + " + " + b + ")", d); break;
        case Op::Mul: expr = d == DType::Bool ? "(" + a + " & " + b + ")" : round("(" + a + " * " + b + ")", d); break;
        case Op::Mod: expr = is_float(d) ? round("fmodf(" + a + ", " + b + ")", d) : "lumen_imod(" + a + ", " + b + ")"; break;
        default: expr = "(" + a + " < " + b + ")"; break;
      }
      break;
    }
    case ValueKind::Cast: expr = cast_expr(arg(0), v->args[0]->dtype, v->dtype); break;
    case ValueKind::Select: expr = "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")"; break;
    case ValueKind::Max: {
      std::string a = arg(0), b = arg(1);
      expr = is_float(v->dtype) ? "lumen_maxf(" + a + ", " + b + ")"
             : v->dtype == DType::Bool ? "(" + a + " | " + b + ")" : "lumen_maxi(" + a + ", " + b + ")";
      break;
    }
  }
  std::string name = "v" + std::to_string((*counter_)++);
  out_ << pad_ << "const " << value_type(v->dtype) << " " << name << " = " << expr << ";\n";
  names_[v.get()] = name;
  return name;
}

// ---- statements --------------------------------------------------------------------------

namespace {

class KernelWriter {
 public:
  explicit KernelWriter(const Kernel& k) : kernel_(k), printer_(k.dims) {}

  std::string render() {
    std::ostringstream out;
    out << "// kernel " << kernel_.name << ": fuses";
    for (const std::string& f : kernel_.fused) out << " " << f;
    out << "\n";
    out << "extern \"C\" int64_t lumen_" << kernel_.name << "_tasks(const int64_t* dims) {\n";
    write_dims(out);
    const Stmt* parallel = outer_parallel();
    out << "  return " << (parallel ? printer_.print(parallel->extent) : std::string("1LL")) << ";\n}\n";
    out << "extern \"C\" void lumen_" << kernel_.name
        << "(void* const* buffers, const int64_t* dims, int64_t task_begin, int64_t task_end, lumen_status* status) {\n";
    for (size_t i = 0; i < kernel_.buffers.size(); ++i) {
      const BufferArg& b = kernel_.buffers[i];
      out << "  " << (b.output ? "" : "const ") << storage_type(b.dtype) << "* __restrict b" << i << " = ("
          << (b.output ? "" : "const ") << storage_type(b.dtype) << "*)buffers[" << i << "];  // " << b.name << "\n";
    }
    write_dims(out);
    out << "  (void)status;\n";
    if (outer_parallel()) {
      write_block(out, kernel_.body, 1, true);
    } else {
      out << "  if (task_begin > 0 || task_end < 1) return;\n";
      write_block(out, kernel_.body, 1, false);
    }
    out << "}\n";
    return out.str();
  }

 private:
  void write_dims(std::ostream& out) const {
    for (size_t i = 0; i < kernel_.dims.size(); ++i) {
      out << "  const int64_t d_" << c_identifier(kernel_.dims[i]) << " = dims[" << i << "];\n";
      out << "  (void)d_" << c_identifier(kernel_.dims[i]) << ";\n";
    }
  }

  const Stmt* outer_parallel() const {
    for (const Stmt& s : kernel_.body) {
      if (s.kind == StmtKind::Loop && s.loop == LoopKind::Parallel) return &s;
    }
    return nullptr;
  }

  void write_block(std::ostream& out, const Block& block, int depth, bool top_parallel) {
    std::string pad(static_cast<size_t>(depth) * 2, ' ');
    for (const Stmt& s : block) {
      if (s.kind == StmtKind::Loop && (s.loop == LoopKind::Unroll || s.loop == LoopKind::Vector) && lanes_supported(s)) {
        write_lanes(out, s, pad, &counter_, printer_, kernel_);
        continue;
      }
      ScalarEmitter values(kernel_, printer_, out, pad, &counter_);
      switch (s.kind) {
        case StmtKind::Loop: {
          std::string v = printer_.print(s.var);
          bool parallel = top_parallel && s.loop == LoopKind::Parallel;
          if (s.unroll_hint > 1) out << pad << "#pragma GCC unroll " << s.unroll_hint << "\n";
          out << pad << "for (int64_t " << v << " = " << (parallel ? "task_begin" : "0") << "; " << v << " < "
              << (parallel ? "task_end" : printer_.print(s.extent)) << "; ++" << v << ") {  // "
              << loop_kind_name(s.loop) << "\n";
          write_block(out, s.body, depth + 1, false);
          out << pad << "}\n";
          break;
        }
        case StmtKind::AccInit:
          out << pad << value_type(s.dtype) << " acc" << s.acc << " = " << accumulator_identity(s.dtype, s.combine) << ";\n";
          break;
        case StmtKind::AccUpdate: {
          std::string v = values.emit(s.value);
          std::string a = "acc" + std::to_string(s.acc);
          out << pad << a << " = " << combine_expr(a, v, s.value->dtype, s.combine) << ";\n";
          break;
        }
        case StmtKind::Store: {
          std::string v = values.emit(s.value);
          out << pad << "b" << s.buffer << "[" << printer_.print(s.index) << "] = " << store_expr(v, kernel_.buffers[static_cast<size_t>(s.buffer)].dtype) << ";\n";
          break;
        }
        case StmtKind::Bind: {
          std::string g = printer_.print(s.var);
          out << pad << "int64_t " << g << " = 0;\n";
          out << pad << "if (" << printer_.print(s.guard) << ") {\n";
          ScalarEmitter inner(kernel_, printer_, out, pad + "  ", &counter_);
          std::string v = inner.emit(s.value);
          std::string bound = printer_.print(s.bound);
          out << pad << "  " << g << " = (int64_t)" << v << ";\n";
          out << pad << "  if (" << g << " < 0 || " << g << " >= " << bound << ") { lumen_fail(status, " << g << ", " << bound
              << "); " << g << " = 0; }\n";
          out << pad << "}\n";
          break;
        }
      }
    }
  }

  const Kernel& kernel_;
  ExprPrinter printer_;
  int counter_ = 0;
};

}  // namespace

std::string accumulator_identity(DType d, Combine c) {
  if (c == Combine::Sum) return number_literal(0, d);
  if (is_float(d)) return "-INFINITY";
  if (d == DType::I32) return "(-2147483647 - 1)";
  return "false";
}

std::string combine_expr(const std::string& acc, const std::string& v, DType d, Combine c) {
  if (c == Combine::Sum) return d == DType::Bool ? acc + " | " + v : acc + " + " + v;
  if (is_float(d)) return "lumen_maxf(" + acc + ", " + v + ")";
  if (d == DType::Bool) return acc + " | " + v;
  return "lumen_maxi(" + acc + ", " + v + ")";
}

std::string store_expr(const std::string& v, DType d) {
  switch (d) {
    case DType::F16: return "lumen_f32_to_f16(" + v + ")";
    case DType::BF16: return "lumen_f32_to_bf16(" + v + ")";
    case DType::Bool: return "(uint8_t)" + v;
    default: return v;
  }
}

std::string render_kernel(const Kernel& k) { return KernelWriter(k).render(); }

std::string render_source(const std::vector<Kernel>& kernels) {
  std::string src = prelude();
  for (const Kernel& k : kernels) src += "\n" + render_kernel(k);
  return src;
}

}  // namespace lumen::cpu
