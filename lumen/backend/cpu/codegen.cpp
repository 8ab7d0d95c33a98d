#include "lumen/backend/cpu/codegen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>

#include "lumen/backend/cpu/compiler.h"
#include "lumen/backend/cpu/isa.h"
#include "lumen/backend/cpu/prelude.h"
#include "lumen/kernel/schedule_space.h"
#include "lumen/backend/cpu/writer.h"
#include "lumen/core/error.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/linear_form.h"
#include "lumen/core/simplify.h"
#include "lumen/kernel/bounded_sum.h"

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
    case DType::I8: return "int8_t";
    case DType::U8: return "uint8_t";
    case DType::I64: return "int64_t";
    case DType::F64: return "double";
  }
  return "?";
}

// Whether any buffer, accumulator or value of the kernel is 8 bytes wide.
bool value_is_wide(const Value& v) {
  if (is_wide(v->dtype)) return true;
  for (const Value& a : v->args) {
    if (value_is_wide(a)) return true;
  }
  return false;
}

// (A gather index bound by a Bind is read outside any lane region, in scalar
// code: an i64 index alone keeps the kernel's SIMD.)
bool block_is_wide(const Block& block) {
  for (const Stmt& s : block) {
    if (s.kind == StmtKind::AccInit && is_wide(s.dtype)) return true;
    if (s.value && s.kind != StmtKind::Bind && value_is_wide(s.value)) return true;
    if (s.kind == StmtKind::Loop && block_is_wide(s.body)) return true;
  }
  return false;
}

bool kernel_is_wide(const Kernel& k) {
  for (const BufferArg& b : k.buffers) {
    if (b.output && is_wide(b.dtype)) return true;
  }
  return block_is_wide(k.body);
}

constexpr int64_t kMaxCombos = 256;
// Partial accumulators a reduction keeps apart at most, over its unrolled lanes and vectors.
constexpr int64_t kMaxChainedAccs = 8;

}  // namespace

// ---- helpers shared with value_writer.cpp ------------------------------------------

const char* value_type(DType d) {
  switch (d) {
    case DType::F32:
    case DType::F16:
    case DType::BF16: return "float";
    case DType::I32:
    case DType::I8:
    case DType::U8: return "int32_t";
    case DType::Bool: return "bool";
    case DType::I64: return "int64_t";
    case DType::F64: return "double";
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
  if (d == DType::I64) {
    int64_t i = saturate_to_i64(v);
    if (i == INT64_MIN) return "(-9223372036854775807LL - 1)";
    return "(int64_t)" + std::to_string(i) + "LL";
  }
  if (!is_float(d)) return "(int32_t)" + std::to_string(static_cast<int64_t>(saturate_to(d, v)));
  double r = round_to_dtype(v, d);
  if (std::isnan(r)) return "NAN";
  if (std::isinf(r)) return r > 0 ? "INFINITY" : "-INFINITY";
  char buf[64];
  std::snprintf(buf, sizeof buf, d == DType::F64 ? "%.17g " : "%.9gf", r);  // the space stands in for no suffix
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s.insert(s.size() - 1, ".0");
  if (d == DType::F64) s.pop_back();
  return s;
}

std::string accumulator_identity(DType d, Combine c) {
  if (c == Combine::Sum) return number_literal(0, d);
  if (is_float(d)) return "-INFINITY";
  if (d == DType::I32) return "(-2147483647 - 1)";
  if (d == DType::I64) return "(-9223372036854775807LL - 1)";
  return "false";
}

std::string combine_expr(const std::string& acc, const std::string& v, DType d, Combine c) {
  if (c == Combine::Sum) return d == DType::Bool ? acc + " | " + v : acc + " + " + v;
  if (d == DType::F64) return "lumen_maxd(" + acc + ", " + v + ")";
  if (is_float(d)) return "lumen_maxf(" + acc + ", " + v + ")";
  if (d == DType::Bool) return acc + " | " + v;
  if (d == DType::I64) return "lumen_maxl(" + acc + ", " + v + ")";
  return "lumen_maxi(" + acc + ", " + v + ")";
}

std::string store_expr(const std::string& v, DType d) {
  switch (d) {
    case DType::F16: return "lumen_f32_to_f16(" + v + ")";
    case DType::BF16: return "lumen_f32_to_bf16(" + v + ")";
    case DType::Bool: return "(uint8_t)(" + v + ")";
    case DType::I8: return "(int8_t)(" + v + ")";
    case DType::U8: return "(uint8_t)(" + v + ")";
    default: return v;
  }
}

ExprPrinter::ExprPrinter(const std::vector<std::string>& dims) {
  for (size_t i = 0; i < dims.size(); ++i) dim_names_[dims[i]] = "d_" + c_identifier(dims[i]);
}

std::string ExprPrinter::var_name(const Expr& v) const {
  auto it = dim_names_.find(v.name());
  // A dynamic dim: unbounded, or bounded where the compiler knows more (a
  // sliced group's chunk origin lies in [0, extent - chunk]).
  if (it != dim_names_.end() && v.lo() == 0) return it->second;
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

// ---- the kernel --------------------------------------------------------------------------

KernelWriter::KernelWriter(const Kernel& k, int simd_lanes)
    : kernel_(k), printer_(k.dims), simd_(simd_lanes), wide_(kernel_is_wide(k)) {}

std::string KernelWriter::render() {
  std::ostringstream& out = out_;
  out << "// kernel " << kernel_.name << ": fuses";
  for (const std::string& f : kernel_.fused) out << " " << f;
  out << "\n";
  const Stmt* parallel = nullptr;
  for (const Stmt& s : kernel_.body) {
    if (s.kind == StmtKind::Loop && s.loop == LoopKind::Parallel) parallel = &s;
  }
  auto dims = [&] {
    for (size_t i = 0; i < kernel_.dims.size(); ++i) {
      std::string d = "d_" + c_identifier(kernel_.dims[i]);
      out << "  const int64_t " << d << " = dims[" << i << "];\n  (void)" << d << ";\n";
    }
  };
  out << "extern \"C\" int64_t lumen_" << kernel_.name << "_tasks(const int64_t* dims) {\n";
  dims();
  out << "  return " << (parallel ? printer_.print(parallel->extent) : std::string("1LL")) << ";\n}\n";
  out << "extern \"C\" void lumen_" << kernel_.name
      << "(void* const* buffers, const int64_t* dims, int64_t task_begin, int64_t task_end, lumen_status* status) {\n";
  for (size_t i = 0; i < kernel_.buffers.size(); ++i) {
    const BufferArg& b = kernel_.buffers[i];
    std::string c = b.output ? "" : "const ";
    out << "  " << c << storage_type(b.dtype) << "* __restrict b" << i << " = (" << c << storage_type(b.dtype)
        << "*)buffers[" << i << "];  // " << b.name << "\n";
  }
  dims();
  out << "  (void)status;\n";
  if (!parallel) out << "  if (task_begin > 0 || task_end < 1) return;\n";
  LaneState none;
  write_block(kernel_.body, 1, none, true);
  out << "}\n";
  return out.str();
}

std::vector<Combo> KernelWriter::combos(const LaneState& lanes) const {
  std::vector<Combo> result;
  std::vector<int64_t> at(lanes.vars.size(), 0);
  while (true) {
    Combo c;
    for (size_t i = 0; i < lanes.vars.size(); ++i) {
      c.subst[lanes.vars[i]] = Expr(at[i]);
      c.key += (i ? "_" : "") + std::to_string(at[i]);
    }
    if (lanes.vl.defined()) {
      int64_t chunk = lanes.chunk.is_const() ? lanes.chunk.value() : c.subst.at(lanes.chunk).value();
      c.subst[lanes.vector_var] = lanes.vl + chunk * simd_;
      c.vector = true;
      c.vl = lanes.vl;
      c.vector_var = lanes.vector_var;
      c.chunk_base = chunk * simd_;
      c.key += "v";
    }
    result.push_back(std::move(c));
    size_t i = at.size();
    while (i > 0) {
      --i;
      if (++at[i] < lanes.extents[i]) break;
      at[i] = 0;
      if (i == 0) return result;
    }
    if (at.empty()) return result;
  }
}

// A SIMD loop of one vector, or of a few (kMaxLaneChunks: reduce lanes spanning the period of
// packed quants' digits), each chunk a vector of the same partial accumulator.
bool KernelWriter::is_reduce_lanes_span(const Stmt& loop) const {
  if (loop.loop != LoopKind::Vector || !loop.extent.is_const()) return false;
  int64_t e = loop.extent.value();
  return e % simd_ == 0 && e / simd_ >= 1 && e / simd_ <= kernel::kMaxLaneChunks;
}

// A lane region can be written in lock step if nested loops have uniform
// extents, it binds no gather index, its combos stay few, and every
// accumulator it updates is declared inside it (or, for a plain SIMD loop,
// is a partial accumulator declared just outside).
bool KernelWriter::lane_region_supported(const Stmt& loop) const {
  int64_t combos = 1;
  std::vector<Expr> lane_vars;
  bool ok = true, simple_simd = !wide_ && is_reduce_lanes_span(loop);
  std::vector<int> declared;
  std::function<void(const Stmt&)> visit = [&](const Stmt& s) {
    if (s.kind == StmtKind::Loop) {
      if (is_lane(s.loop)) {
        lane_vars.push_back(s.var);
        if (!s.extent.is_const()) ok = false;
        int64_t e = s.extent.is_const() ? s.extent.value() : 1;
        combos *= (!wide_ && s.loop == LoopKind::Vector && e % simd_ == 0) ? e / simd_ : e;
        if (&s != &loop) simple_simd = false;
      } else {
        for (const Expr& v : expr_vars(s.extent)) {
          if (std::find(lane_vars.begin(), lane_vars.end(), v) != lane_vars.end()) ok = false;
        }
      }
      for (const Stmt& b : s.body) visit(b);
    } else if (s.kind == StmtKind::Bind) {
      ok = false;
    } else if (s.kind == StmtKind::AccInit) {
      declared.push_back(s.acc);
    } else if (s.kind == StmtKind::AccUpdate) {
      if (std::find(declared.begin(), declared.end(), s.acc) == declared.end() && !simple_simd) ok = false;
    }
  };
  visit(loop);
  return ok && combos <= kMaxCombos;
}

// An accumulator declared outside SIMD lanes (perhaps inside unrolled ones)
// and updated inside a plain SIMD loop (reduce lanes) keeps one partial result
// per SIMD lane. Reduce lanes spanning several vectors keep one accumulator a
// vector: each vector's adds (or maxes) are a chain of their own, not one chain
// through every vector of the span (a row max over 2048 floats held in L2, 2
// threads: one chain waits on vmaxps's latency every vector). Up to
// kMaxChainedAccs accumulators across the unrolled lanes.
void KernelWriter::mark_partial_accs(const Block& block, size_t from, const Stmt& init, int64_t lane_combos) {
  if (wide_) return;  // no SIMD lanes in a wide kernel
  AccState& st = accs_[init.acc];
  for (size_t i = from; i < block.size(); ++i) {
    walk({block[i]}, [&](const Stmt& s) {
      if (s.kind != StmtKind::Loop || !is_reduce_lanes_span(s)) return;
      if (!lane_region_supported(s)) return;
      walk(s.body, [&](const Stmt& u) {
        if (u.kind != StmtKind::AccUpdate || u.acc != init.acc) return;
        st.partial = true;
        int64_t chunks = s.extent.value() / simd_;
        if (chunks * lane_combos <= kMaxChainedAccs) st.chunks = std::max(st.chunks, chunks);
      });
    });
  }
}

namespace {

// Accumulator `name`'s partial result for chunk c (itself where it keeps one).
std::string chunk_name(const AccState& st, const std::string& name, int64_t c) {
  return st.chunks == 1 ? name : name + "_p" + std::to_string(c);
}

// Two vectors of an accumulator's kind combined: a + b, a | b (masks), or the max.
std::string vector_combine(const AccState& st, const std::string& a, const std::string& b) {
  if (st.dtype == DType::Bool) return a + " | " + b;
  if (st.combine == Combine::Sum) return a + " + " + b;
  return (is_float(st.dtype) ? "lumen_maxv(" : "lumen_maxv_i32(") + a + ", " + b + ")";
}

}  // namespace

std::string KernelWriter::update_name(int acc, const Combo& combo) const {
  return chunk_name(accs_.at(acc), acc_name(acc, combo), combo.vector ? combo.chunk_base / simd_ : 0);
}

std::string KernelWriter::chunks_combined(const AccState& st, const std::string& name) const {
  std::vector<std::string> parts;
  for (int64_t c = 0; c < st.chunks; ++c) parts.push_back(chunk_name(st, name, c));
  const bool infix = st.dtype == DType::Bool || st.combine == Combine::Sum;
  while (parts.size() > 1) {  // pairwise: (p0 + p1) + (p2 + p3)
    std::vector<std::string> next;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      std::string e = vector_combine(st, parts[i], parts[i + 1]);
      next.push_back(infix ? "(" + e + ")" : e);
    }
    if (parts.size() % 2) next.push_back(parts.back());
    parts = std::move(next);
  }
  return parts.front();
}

std::string KernelWriter::acc_name(int acc, const Combo& combo) const {
  const AccState& st = accs_.at(acc);
  std::string name = "acc" + std::to_string(acc);
  for (const Expr& v : st.lane_vars) name += "_" + std::to_string(combo.subst.at(v).value());
  return name;
}

void KernelWriter::write_block(const Block& block, int depth, LaneState& lanes, bool top) {
  std::string pad(static_cast<size_t>(depth) * 2, ' ');
  for (size_t i = 0; i < block.size(); ++i) {
    const Stmt& s = block[i];
    if (s.kind == StmtKind::Loop) {
      write_loop(s, depth, lanes, top);
      // Partial accumulators finished by this loop are combined once, here
      // (after the last of the loops that update one: a loop split at a
      // SIMD tail leaves a loop of whole vectors and a masked one).
      for (auto& [id, st] : accs_) {
        if (!st.partial || !st.combined.empty() || st.depth != depth) continue;
        auto updates = [&, acc = id](const Stmt& from) {
          bool found = false;
          walk({from}, [&](const Stmt& u) { found = found || (u.kind == StmtKind::AccUpdate && u.acc == acc); });
          return found;
        };
        if (!updates(s)) continue;
        bool later = false;
        for (size_t j = i + 1; j < block.size() && !later; ++j) later = updates(block[j]);
        if (later) continue;
        std::string f = st.combine == Combine::Sum ? (is_float(st.dtype) ? "lumen_hsum_f32" : "lumen_hsum_i32")
                        : st.dtype == DType::Bool  ? "lumen_hany"
                        : is_float(st.dtype)       ? "lumen_hmax_f32"
                                                   : "lumen_hmax_i32";
        if (st.lane_vars.empty()) {
          st.combined = "acc" + std::to_string(id) + "_all";
          out_ << pad << "const " << value_type(st.dtype) << " " << st.combined << " = " << f << "("
               << chunks_combined(st, "acc" + std::to_string(id)) << ");\n";
        } else {  // one per unrolled lane (rows of a matrix-vector product)
          st.combined = "per lane";
          for (const Combo& c : combos(lanes)) {
            std::string a = acc_name(id, c);
            out_ << pad << "const " << value_type(st.dtype) << " " << a << "_all = " << f << "("
                 << chunks_combined(st, a) << ");\n";
          }
        }
      }
      continue;
    }
    if (s.kind == StmtKind::AccInit) {
      AccState st{s.dtype, s.combine, lanes.vars, lanes.vl.defined(), false, "", depth};
      accs_[s.acc] = st;
      acc_loops_[s.acc] = loop_stack_;
      int64_t lane_combos = 1;
      for (int64_t e : lanes.extents) lane_combos *= e;
      if (!lanes.vl.defined()) mark_partial_accs(block, i + 1, s, lane_combos);
    }
    if (!lanes.active()) {
      write_leaf(s, pad, Combo{});
    } else {
      for (const Combo& c : combos(lanes)) write_leaf(s, pad, c);
    }
    cache_.clear();
    varying_cache_.clear();
    partial_read_.clear();
  }
}

void KernelWriter::write_loop(const Stmt& s, int depth, LaneState& lanes, bool top) {
  std::string pad(static_cast<size_t>(depth) * 2, ' ');
  if (is_lane(s.loop) && (lanes.active() || lane_region_supported(s))) {
    LaneState inner = lanes;
    int64_t extent = s.extent.value();
    bool simd = !wide_ && s.loop == LoopKind::Vector && !inner.vl.defined() && extent % simd_ == 0;
    if (simd) {
      uses_vectors_ = true;
      std::string base = c_identifier(s.var.name());
      inner.vector_var = s.var;
      inner.vl = Expr::var(base + "_l", 0, simd_ - 1);
      if (extent / simd_ > 1) {
        inner.chunk = Expr::var(base + "_c", 0, extent / simd_ - 1);
        inner.vars.push_back(inner.chunk);
        inner.extents.push_back(extent / simd_);
      } else {
        inner.chunk = Expr(0);
      }
    } else {
      inner.vars.push_back(s.var);
      inner.extents.push_back(extent);
    }
    out_ << pad << "{  // " << s.var << " in [0, " << extent << "): " << (simd ? "SIMD lanes" : "unrolled lanes") << "\n";
    write_block(s.body, depth + 1, inner, false);
    out_ << pad << "}\n";
    return;
  }
  std::string v = printer_.print(s.var);
  bool parallel = top && s.loop == LoopKind::Parallel;
  if (s.unroll_hint > 1) out_ << pad << "#pragma GCC unroll " << s.unroll_hint << "\n";
  out_ << pad << "for (int64_t " << v << " = " << (parallel ? "task_begin" : "0") << "; " << v << " < "
       << (parallel ? "task_end" : printer_.print(s.extent)) << "; ++" << v << ") {  // " << loop_kind_name(s.loop)
       << "\n";
  loop_stack_.push_back(s.var);
  write_block(s.body, depth + 1, lanes, false);
  loop_stack_.pop_back();
  if (!parallel && !lanes.active()) {
    std::string saturated = saturated_condition(s);
    // Tested every fourth step: a full scan (nothing true) keeps its pace.
    if (!saturated.empty()) out_ << pad << "  if ((" << v << " & 3) == 3 && " << saturated << ") break;  // any: true for good\n";
  }
  out_ << pad << "}\n";
}

std::string KernelWriter::saturated_condition(const Stmt& loop) const {
  std::vector<int> accs;
  bool only_any = true;
  walk(loop.body, [&](const Stmt& u) {
    if (u.kind == StmtKind::Store || u.kind == StmtKind::Bind || u.kind == StmtKind::AccInit) only_any = false;
    if (u.kind != StmtKind::AccUpdate) return;
    auto it = accs_.find(u.acc);
    // One value an accumulator (not one per output lane, nor per unrolled row).
    if (it == accs_.end() || it->second.dtype != DType::Bool || it->second.combine != Combine::Max ||
        it->second.vector || !it->second.lane_vars.empty()) {
      only_any = false;
      return;
    }
    if (std::find(accs.begin(), accs.end(), u.acc) == accs.end()) accs.push_back(u.acc);
  });
  if (!only_any) return "";
  std::string condition;
  for (int a : accs) {
    const AccState& st = accs_.at(a);
    std::string name = "acc" + std::to_string(a);
    condition += (condition.empty() ? "" : " && ") + (st.partial ? "lumen_hany(" + chunks_combined(st, name) + ")" : name);
  }
  return condition;
}

void KernelWriter::write_leaf(const Stmt& s, const std::string& pad, const Combo& combo) {
  switch (s.kind) {
    case StmtKind::AccInit: {
      const AccState& st = accs_.at(s.acc);
      std::string identity = accumulator_identity(s.dtype, s.combine);
      if (st.vector || st.partial) {
        uses_vectors_ = true;
        std::string splat = s.dtype == DType::Bool ? "lumen_splat_mask(" + identity + ")"
                            : is_float(s.dtype)   ? "lumen_splat_f32(" + identity + ")"
                                                  : "lumen_splat_i32(" + identity + ")";
        for (int64_t c = 0; c < st.chunks; ++c) {
          out_ << pad << vtype(s.dtype) << " " << chunk_name(st, acc_name(s.acc, combo), c) << " = " << splat << ";\n";
        }
      } else {
        out_ << pad << value_type(s.dtype) << " " << acc_name(s.acc, combo) << " = " << identity << ";\n";
      }
      return;
    }
    case StmtKind::AccUpdate: {
      const AccState& st = accs_.at(s.acc);
      if (combo.vector && kernel_.prefetch_rows > 0) write_prefetches(s.value, combo, acc_loops_[s.acc], pad);
      std::string a = update_name(s.acc, combo);
      if (st.vector && combo.vector && st.combine == Combine::Sum && st.dtype == DType::F32) {
        if (auto pairs = bf16_pairs(s.value, combo, pad)) {  // two steps of a bf16 contraction: one vdpbf16ps
          out_ << pad << a << " = lumen_dot_bf16_pairs(" << a << ", " << pairs->first << ", " << pairs->second << ");\n";
          return;
        }
      }
      if (st.vector && combo.vector && st.combine == Combine::Sum && st.dtype == DType::I32) {
        if (auto dot = byte_dot(s.value, combo, pad, a)) {  // a block's integer sum: vpdpbusd into it
          out_ << pad << a << " = " << dot->name << ";\n";
          return;
        }
      }
      Reg r = value(s.value, combo, pad);
      if (st.vector || st.partial) {
        // A scalar term (a bounded sum's block total) of a sum kept one partial per SIMD
        // lane goes into one lane: splat into all it would count once per lane.
        bool one_lane = st.partial && !st.vector && !r.vector && st.combine == Combine::Sum &&
                        (st.dtype == DType::F32 || st.dtype == DType::I32);
        std::string v = !one_lane ? splat(r, pad).name
                        : st.dtype == DType::F32 ? "lumen_first_lane_f32(" + r.name + ")"
                                                 : "lumen_first_lane_i32(" + r.name + ")";
        out_ << pad << a << " = " << vector_combine(st, a, v) << ";\n";
      } else {
        out_ << pad << a << " = " << combine_expr(a, r.name, st.dtype, st.combine) << ";\n";
      }
      return;
    }
    case StmtKind::Store: write_store(s, pad, combo); return;
    case StmtKind::Bind: {
      std::string g = printer_.print(s.var);
      out_ << pad << "int64_t " << g << " = 0;\n";
      out_ << pad << "if (" << printer_.print(subst(s.guard, combo)) << ") {\n";
      Reg r = value(s.value, combo, pad + "  ");
      std::string bound = printer_.print(s.bound);
      out_ << pad << "  " << g << " = (int64_t)" << r.name << ";\n";
      out_ << pad << "  if (" << g << " < 0 || " << g << " >= " << bound << ") { lumen_fail(status, " << g << ", "
           << bound << "); " << g << " = 0; }\n";
      out_ << pad << "}\n";
      return;
    }
    case StmtKind::Loop: break;
  }
}

// The address of lane 0 of `buffer[index]` with `row` moved `prefetch_rows` iterations ahead.
std::string KernelWriter::rows_ahead(int buffer, const Expr& index, const Combo& combo, const Expr& row) const {
  std::unordered_map<Expr, Expr, ExprHash> ahead{{combo.vl, Expr(0)}, {row, row + kernel_.prefetch_rows}};
  return "b" + std::to_string(buffer) + " + " + printer_.print(simplify(substitute(index, ahead)));
}

// A reduction inside a row loop (the innermost loop around it that its load
// walks) prefetches the same place of the row `prefetch_rows` iterations
// ahead, so the next rows' DRAM reads overlap this row's arithmetic. (A
// prefetch past the end never faults.)
void KernelWriter::write_prefetches(const Value& v, const Combo& combo, const std::vector<Expr>& loops,
                                    const std::string& pad) {
  std::set<std::string> done;
  std::function<void(const Value&)> visit = [&](const Value& x) {
    if (x->kind == ValueKind::Load) {
      Expr index = subst(x->index, combo);
      auto stride = lane_stride(index, combo.vl);
      if (!stride) {  // a reduction's vector overhanging its end
        if (auto w = unwrap_overhang(index, subst(x->valid, combo), combo.vl)) {
          index = *w;
          stride = lane_stride(index, combo.vl);
        }
      }
      // Bytes read four a lane (int8 dot products) walk their row as contiguously as floats; the
      // four reads of a lane (offsets 4l + t) share lines, so only t = 0 prefetches.
      if (stride && *stride == 4 && (x->dtype == DType::I8 || x->dtype == DType::U8)) {
        auto form = LinearForm::of(index);
        if (form && form->constant % 4 != 0) return;
        stride = 1;
      }
      Expr row;
      for (const Expr& l : loops) {
        if (mentions(index, l)) row = l;
      }
      if (stride && *stride == 1 && row.defined()) {
        std::string at = rows_ahead(x->buffer, index, combo, row);
        if (done.insert(at).second) out_ << pad << "__builtin_prefetch(" << at << ");\n";
      }
    }
    for (const Value& a : x->args) visit(a);
  };
  visit(v);
}

void KernelWriter::write_store(const Stmt& s, const std::string& pad, const Combo& combo) {
  DType storage = kernel_.buffers[static_cast<size_t>(s.buffer)].dtype;
  std::string buffer = "b" + std::to_string(s.buffer);
  Reg r = value(s.value, combo, pad);
  Expr index = subst(s.index, combo);
  if (!combo.vector) {
    out_ << pad << buffer << "[" << printer_.print(index) << "] = " << store_expr(r.name, storage) << ";\n";
    return;
  }
  auto stride = lane_stride(index, combo.vl);
  bool unit_stride = stride && *stride == 1 && (storage == DType::F32 || storage == DType::I32);
  if (!unit_stride && (storage == DType::F32 || storage == DType::I32)) {
    auto u = unclamp(index, combo.vl);
    auto mask = u && lane_stride(u->index, combo.vl) == std::optional<int64_t>(1) ? index_vector(u->in_bounds, combo)
                                                                                    : std::nullopt;
    if (mask) {  // a vector overhanging its row's end: the lanes in bounds are stored
      Reg v = splat(r, pad);
      std::unordered_map<Expr, Expr, ExprHash> zero{{combo.vl, Expr(0)}};
      std::string base = printer_.print(simplify(substitute(u->index, zero)));
      out_ << pad << (storage == DType::F32 ? "lumen_maskstore_f32(" : "lumen_maskstore_i32(") << buffer << " + " << base
           << ", " << *mask << ", " << v.name << ");\n";
      return;
    }
  }
  if (storage == DType::BF16 && simd_ == 16 && stride && (*stride == 1 || *stride == 2) &&
      (r.dtype == DType::F32 || r.dtype == DType::BF16)) {
    // bf16 lanes, contiguous or every other element (a PairDot panel's halves), rounded in SIMD.
    Reg v = splat(r, pad);
    std::unordered_map<Expr, Expr, ExprHash> zero{{combo.vl, Expr(0)}};
    std::string base = printer_.print(simplify(substitute(index, zero)));
    if (*stride == 1) {
      out_ << pad << "lumen_store_bf16(" << buffer << " + " << base << ", " << v.name << ");\n";
    } else {
      out_ << pad << "lumen_store_bf16_stride2(" << buffer << ", " << base << ", " << v.name << ");\n";
    }
    return;
  }
  if (stride && *stride == 1 && storage == DType::I8 && !is_float(r.dtype) && r.dtype != DType::Bool) {
    // i8 lanes (a quantized activation): saturated to bytes, as a scalar store's cast would.
    Reg v = splat(r, pad);
    std::unordered_map<Expr, Expr, ExprHash> zero{{combo.vl, Expr(0)}};
    out_ << pad << "lumen_store_i8(" << buffer << " + " << printer_.print(simplify(substitute(index, zero))) << ", " << v.name
         << ");\n";
    return;
  }
  if (unit_stride) {
    Reg v = splat(r, pad);
    // Row kernels that prefetch their reads also start the stores' line
    // fetches (read-for-ownership) the same number of rows ahead.
    if (kernel_.prefetch_rows > 0 && !loop_stack_.empty() && mentions(index, loop_stack_.front())) {
      out_ << pad << "__builtin_prefetch(" << rows_ahead(s.buffer, index, combo, loop_stack_.front()) << ", 1);\n";
    }
    std::unordered_map<Expr, Expr, ExprHash> zero{{combo.vl, Expr(0)}};
    std::string base = printer_.print(simplify(substitute(index, zero)));
    out_ << pad << (storage == DType::F32 ? "lumen_store_f32(" : "lumen_store_i32(") << buffer << " + " << base << ", "
         << v.name << ");\n";
    return;
  }
  // Lane by lane. Lanes past a clamped row end hold values computed from masked
  // (zero) reads: only the lanes in bounds store.
  auto u = unclamp(index, combo.vl);
  for (int l = 0; l < simd_; ++l) {
    std::unordered_map<Expr, Expr, ExprHash> at{{combo.vl, Expr(l)}};
    std::string element = r.vector ? r.name + "[" + std::to_string(l) + "]" : r.name;
    if (r.vector && r.dtype == DType::Bool) element = "(" + element + " != 0)";
    std::string guard = u ? "if (" + printer_.print(simplify(substitute(u->in_bounds, at))) + ") " : "";
    out_ << pad << guard << buffer << "[" << printer_.print(simplify(substitute(u ? u->index : index, at))) << "] = "
         << store_expr(element, storage) << ";\n";
  }
}

// ---- entry points -----------------------------------------------------------------------------

namespace {

// The block of bounded float sums: kSumBlock, or LUMEN_SUM_BLOCK (tests set
// a tiny one so that every reduction of the differential fuzzer is cut).
int64_t sum_block() {
  static const int64_t block = [] {
    const char* v = std::getenv("LUMEN_SUM_BLOCK");
    int64_t b = v ? std::atoll(v) : 0;
    return b > 0 ? b : kernel::kSumBlock;
  }();
  return block;
}

// `k` with its float sums bounded (kernel/bounded_sum.h) for this CPU's SIMD width.
Kernel bounded(const Kernel& k) {
  Kernel out = k;
  kernel::bound_float_sums(out, host_isa().f32_lanes(), sum_block());
  return out;
}

}  // namespace

std::string render_kernel(const Kernel& k) { return KernelWriter(bounded(k), host_isa().f32_lanes()).render(); }

std::string render_source(const std::vector<Kernel>& kernels) { return render_sources(kernels, 1).at(0); }

std::vector<std::string> render_sources(const std::vector<Kernel>& kernels, int parts) {
  struct Rendered {
    std::string text;
    bool vectors;
  };
  std::vector<Rendered> unique;
  std::set<std::string> seen;
  for (const Kernel& k : kernels) {
    if (!seen.insert(k.name).second) continue;
    Kernel b = bounded(k);
    KernelWriter w(b, host_isa().f32_lanes());
    std::string text = w.render();
    unique.push_back({std::move(text), w.uses_vectors()});
  }
  parts = std::max(1, std::min<int>(parts, static_cast<int>(unique.size())));
  // Largest first into the lightest part.
  std::vector<size_t> order(unique.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return unique[a].text.size() > unique[b].text.size(); });
  std::vector<std::string> bodies(static_cast<size_t>(parts));
  std::vector<bool> vectors(static_cast<size_t>(parts), false);
  for (size_t i : order) {
    size_t lightest = 0;
    for (size_t p = 1; p < bodies.size(); ++p) {
      if (bodies[p].size() < bodies[lightest].size()) lightest = p;
    }
    bodies[lightest] += "\n" + unique[i].text;
    vectors[lightest] = vectors[lightest] || unique[i].vectors;
  }
  std::vector<std::string> out;
  for (size_t p = 0; p < bodies.size(); ++p) {
    std::string src = prelude();
    if (vectors[p]) src += vector_prelude(host_isa().f32_lanes());
    out.push_back(src + bodies[p]);
  }
  return out;
}

std::string content_name(const Kernel& k) {
  Kernel canonical = k;
  canonical.name = "x";
  canonical.fused.clear();
  for (BufferArg& b : canonical.buffers) b.name.clear();
  return "k" + hash_hex(render_kernel(canonical)).substr(0, 12);
}

}  // namespace lumen::cpu
