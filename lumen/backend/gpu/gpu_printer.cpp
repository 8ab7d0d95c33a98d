#include "lumen/backend/gpu/gpu_printer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "lumen/backend/gpu/gpu_values.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/simplify.h"

namespace lumen::gpu {

using namespace lumen::kernel;

namespace {

// The work-group local array a combined accumulator of dtype `d` goes through, and its element type.
std::string reduction_array(DType d) {
  if (d == DType::F64) return "lm_red_d";
  if (d == DType::I64) return "lm_red_l";
  return is_float(d) ? "lm_red_f" : "lm_red_i";
}

std::string reduction_type(const std::string& array) {
  if (array == "lm_red_d") return "double";
  if (array == "lm_red_l") return "lm_i64";
  return array == "lm_red_f" ? "float" : "int";
}

constexpr int64_t kMaxLaneCombos = 128;  // registers a thread's tile may take

int64_t planned_extent(const Expr& e) { return e.is_const() ? e.value() : 1024; }

class Writer {
 public:
  Writer(const GpuKernel& g, const Dialect& d) : g_(g), d_(d), values_(g.kernel, d, out_) {
    group_ = g.schedule.reduce == ReduceMode::Group;
    staged_ = g.schedule.stage && g.staging.active;
    if (staged_) values_.set_staging(&g.staging);
  }
  std::string render(const std::string& entry);

 private:
  void signature(const std::string& entry);
  void prologue();
  void staged_prologue();
  void staged_loop(const Stmt& s, int depth);
  void fill(const StagedTile& t, const std::string& pad);
  void block(const Block& b, int depth, bool top);
  void loop(const Stmt& s, int depth, bool top);
  void lanes(const Stmt& s, int depth, bool top);
  void leaf(const Stmt& s, const std::string& pad);
  void combine_across_group(int acc, const std::string& pad);
  bool lane_region_supported(const Stmt& s) const;
  int64_t combos() const;

  const GpuKernel& g_;
  const Dialect& d_;
  std::ostringstream out_;
  ValueWriter values_;
  bool group_ = false;
  bool staged_ = false;
  Expr stride_var_;  // Group mode: the loop of a chain to stride over the group
};

std::string Writer::render(const std::string& entry) {
  out_ << "// kernel " << g_.kernel.name << " (" << g_.schedule.key() << "): fuses";
  for (const std::string& f : g_.kernel.fused) out_ << " " << f;
  out_ << "\n";
  signature(entry);
  prologue();
  block(g_.kernel.body, 1, true);
  out_ << "}\n";
  return out_.str();
}

void Writer::signature(const std::string& entry) {
  out_ << d_.kernel_decl << " " << entry << "(";
  const Kernel& k = g_.kernel;
  for (size_t i = 0; i < k.buffers.size(); ++i) {
    const BufferArg& b = k.buffers[i];
    out_ << (i ? ",\n    " : "\n    ") << d_.global_space << (b.output ? "" : "const ") << storage_type(b.dtype, d_)
         << "* " << d_.restrict_kw << " b" << i;
  }
  for (const std::string& dim : k.dims) out_ << ",\n    const " << d_.i64 << " d_" << identifier(dim);
  out_ << ",\n    " << d_.global_space << d_.i64 << "* lm_status) {\n";
  for (size_t i = 0; i < k.buffers.size(); ++i) out_ << "  // b" << i << ": " << k.buffers[i].name << "\n";
}

void Writer::prologue() {
  if (staged_) {
    staged_prologue();
    return;
  }
  std::string points = values_.expr(simplify(grid_points(g_)));
  if (group_) {
    int gs = g_.schedule.group_size;
    std::map<int, DType> dtypes;
    walk(g_.kernel.body, [&](const Stmt& s) {
      if (s.kind == StmtKind::AccInit) dtypes[s.acc] = s.dtype;
    });
    std::set<std::string> arrays;  // one local array per type the combined accumulators hold
    for (const Stmt* s : top_level(g_.kernel.body)) {
      if (s->kind != StmtKind::Loop) continue;
      for (int a : outer_updates(*s)) arrays.insert(reduction_array(dtypes[a]));
    }
    for (const std::string& name : arrays) {
      out_ << "  " << d_.local_decl << " " << reduction_type(name) << " " << name << "[" << gs << "];\n";
    }
    out_ << "  const " << d_.i64 << " lm_point = " << d_.group_id << ";\n";
    out_ << "  const " << d_.i64 << " lm_lid = " << d_.local_id << ";\n";
  } else {
    out_ << "  const " << d_.i64 << " lm_point = " << d_.global_id << ";\n";
    out_ << "  if (lm_point >= " << points << ") return;\n";
  }
  if (g_.grid.empty()) return;
  out_ << "  " << d_.i64 << " lm_rest = lm_point;\n";
  for (size_t i = g_.grid.size(); i-- > 0;) {
    const GridAxis& a = g_.grid[i];
    std::string v = values_.expr(a.var);
    if (i == 0) {
      out_ << "  const " << d_.i64 << " " << v << " = lm_rest;  // grid axis, extent " << a.extent << "\n";
    } else {
      std::string e = values_.expr(a.extent);
      out_ << "  const " << d_.i64 << " " << v << " = lm_rest % " << e << ";  // grid axis, extent " << a.extent << "\n";
      out_ << "  lm_rest = lm_rest / " << e << ";\n";
    }
  }
  out_ << "  (void)lm_rest;\n";
}

void Writer::block(const Block& b, int depth, bool top) {
  std::string pad(static_cast<size_t>(depth) * 2, ' ');
  for (const Stmt& s : b) {
    if (s.kind == StmtKind::Loop) {
      loop(s, depth, top);
      continue;
    }
    bool guarded = s.kind == StmtKind::Store && ((top && group_) || staged_);
    if (guarded) out_ << pad << (staged_ ? "if (lm_in) {\n" : "if (lm_lid == 0) {\n");
    for (int64_t c = 0; c < combos(); ++c) {
      values_.set_combo(c);
      leaf(s, guarded ? pad + "  " : pad);
    }
    if (guarded) out_ << pad << "}\n";
  }
}

int64_t Writer::combos() const { return values_.combo_count(); }

bool Writer::lane_region_supported(const Stmt& s) const {
  if (!g_.schedule.tile_lanes || !s.extent.is_const()) return false;
  if (combos() * s.extent.value() > kMaxLaneCombos) return false;
  bool ok = true;
  std::vector<Expr> lane_vars = values_.lane_vars();
  lane_vars.push_back(s.var);
  walk(s.body, [&](const Stmt& u) {
    if (u.kind == StmtKind::Bind) ok = false;
    if (u.kind != StmtKind::Loop) return;
    if (is_lane(u.loop)) {
      if (!u.extent.is_const()) ok = false;
      lane_vars.push_back(u.var);
    }
    for (const Expr& v : expr_vars(u.extent)) {
      for (const Expr& l : lane_vars) ok = ok && !(v == l);
    }
  });
  return ok;
}

void Writer::loop(const Stmt& s, int depth, bool top) {
  std::string pad(static_cast<size_t>(depth) * 2, ' ');
  // Group mode strides the reduction loops at a point's top level, lane loops
  // looked through; a loop without reductions, the longest loop of its chain
  // of single loops (a norm's output row under loops of extent 1).
  bool strided = top && group_ && !is_lane(s.loop);
  if (strided && outer_updates(s).empty()) {
    const Stmt* target = &s;
    for (const Stmt* c = &s; c->kind == StmtKind::Loop && !is_lane(c->loop);) {
      if (planned_extent(c->extent) > planned_extent(target->extent)) target = c;
      if (c->body.size() != 1) break;
      c = &c->body[0];
    }
    if (target != &s) {
      strided = false;
      stride_var_ = target->var;
    }
  } else if (!strided && stride_var_.defined() && s.var == stride_var_) {
    strided = true;
    stride_var_ = Expr();
  }
  if (staged_ && s.var == g_.staging.loop_var) {
    staged_loop(s, depth);
    return;
  }
  if (is_lane(s.loop) && lane_region_supported(s)) {
    lanes(s, depth, top);
    return;
  }
  values_.set_combo(0);
  std::string v = values_.expr(s.var);
  std::string extent = values_.expr(values_.substituted(s.extent));
  int unroll = std::max(g_.schedule.unroll, s.unroll_hint);
  if (!strided && unroll > 1 && s.loop == LoopKind::Serial) out_ << pad << "#pragma unroll " << unroll << "\n";
  if (strided) {
    out_ << pad << "for (" << d_.i64 << " " << v << " = lm_lid; " << v << " < " << extent << "; " << v
         << " += " << g_.schedule.group_size << ") {  // strided over the work-group\n";
  } else {
    out_ << pad << "for (" << d_.i64 << " " << v << " = 0; " << v << " < " << extent << "; ++" << v << ") {  // "
         << loop_kind_name(s.loop) << "\n";
  }
  block(s.body, depth + 1, top && is_lane(s.loop));
  out_ << pad << "}\n";
  if (strided) {
    for (int acc : outer_updates(s)) {
      for (int64_t c = 0; c < combos(); ++c) {  // each lane's register
        values_.set_combo(c);
        combine_across_group(acc, pad);
      }
    }
  }
}

// A block of bx × by points a work-group: each item's point on the last two
// grid axes, clamped to the grid (items past its edge compute but do not store).
void Writer::staged_prologue() {
  const Staging& st = g_.staging;
  const std::string& i64 = d_.i64;
  for (const StagedTile& t : st.tiles) {
    out_ << "  " << d_.local_decl << " " << value_type(t.dtype) << " " << t.name << "[" << t.elements << "];  // "
         << t.load->index << "\n";
  }
  out_ << "  const " << i64 << " lm_lid = " << d_.local_id << ";\n";
  out_ << "  const " << i64 << " lm_tx = lm_lid % " << st.bx << ", lm_ty = lm_lid / " << st.bx << ";\n";
  out_ << "  " << i64 << " lm_rest = " << d_.group_id << ";\n";
  size_t n = g_.grid.size();
  bool two = n >= 2;
  const GridAxis& x = g_.grid[n - 1];
  std::string ex = values_.expr(x.extent);
  out_ << "  const " << i64 << " lm_gx = lm_rest % ((" << ex << " + " << st.bx - 1 << ") / " << st.bx << ");\n";
  out_ << "  lm_rest = lm_rest / ((" << ex << " + " << st.bx - 1 << ") / " << st.bx << ");\n";
  std::string in = "lm_gx * " + std::to_string(st.bx) + " + lm_tx < " + ex;
  out_ << "  const " << i64 << " " << values_.expr(x.var) << " = lm_min(lm_gx * " << st.bx << " + lm_tx, " << ex
       << " - 1);  // grid axis, extent " << x.extent << ", blocked by " << st.bx << "\n";
  if (two) {
    const GridAxis& y = g_.grid[n - 2];
    std::string ey = values_.expr(y.extent);
    out_ << "  const " << i64 << " lm_gy = lm_rest % ((" << ey << " + " << st.by - 1 << ") / " << st.by << ");\n";
    out_ << "  lm_rest = lm_rest / ((" << ey << " + " << st.by - 1 << ") / " << st.by << ");\n";
    in += " && lm_gy * " + std::to_string(st.by) + " + lm_ty < " + ey;
    out_ << "  const " << i64 << " " << values_.expr(y.var) << " = lm_min(lm_gy * " << st.by << " + lm_ty, " << ey
         << " - 1);  // grid axis, extent " << y.extent << ", blocked by " << st.by << "\n";
  }
  for (size_t i = n - (two ? 2 : 1); i-- > 0;) {
    const GridAxis& a = g_.grid[i];
    std::string e = values_.expr(a.extent);
    out_ << "  const " << i64 << " " << values_.expr(a.var) << " = lm_rest % " << e << ";  // grid axis, extent "
         << a.extent << "\n";
    out_ << "  lm_rest = lm_rest / " << e << ";\n";
  }
  out_ << "  (void)lm_rest;\n";
  out_ << "  const int lm_in = " << in << ";  // a point of the grid: its stores happen\n";
}

// The staged loop: chunks of the loop, each copied into the tiles by the
// whole group between two barriers, then run reading the tiles.
void Writer::staged_loop(const Stmt& s, int depth) {
  const Staging& st = g_.staging;
  std::string pad(static_cast<size_t>(depth) * 2, ' ');
  values_.set_combo(0);
  std::string k = values_.expr(st.loop_extent), var = values_.expr(s.var);
  out_ << pad << "for (" << d_.i64 << " lm_r0 = 0; lm_r0 < " << k << "; lm_r0 += " << st.chunk << ") {  // "
       << var << " staged " << st.chunk << " at a time\n";
  for (const StagedTile& t : st.tiles) fill(t, pad + "  ");
  out_ << pad << "  " << d_.barrier << "\n";
  bool whole = st.loop_extent.is_const() && st.loop_extent.value() % st.chunk == 0;
  out_ << pad << "  #pragma unroll 4\n";
  out_ << pad << "  for (" << d_.i64 << " lm_kk = 0; lm_kk < " << st.chunk
       << (whole ? "" : " && lm_r0 + lm_kk < " + k) << "; ++lm_kk) {\n";
  out_ << pad << "    const " << d_.i64 << " " << var << " = lm_r0 + lm_kk;\n";
  out_ << pad << "    (void)" << var << ";\n";
  block(s.body, depth + 2, false);
  out_ << pad << "  }\n";
  out_ << pad << "  " << d_.barrier << "\n";
  out_ << pad << "}\n";
}

// The group copies one tile: each element once, the dimension of smallest
// global stride fastest; elements off the grid or past the loop are 0.
void Writer::fill(const StagedTile& t, const std::string& pad) {
  const Staging& st = g_.staging;
  int64_t count = 1;
  for (const StagedDim& d : t.dims) count *= d.size;
  // Positions inside the tile in 32 bits: its divisions by constants stay cheap.
  out_ << pad << "for (int lm_t = (int)lm_lid; lm_t < " << count << "; lm_t += " << g_.schedule.group_size
       << ") {  // " << t.name << ": the group copies " << count << " elements\n";
  out_ << pad << "  int lm_q = lm_t;\n";
  std::string offset = "0", in = "1";
  for (size_t i = t.dims.size(); i-- > 0;) {
    const StagedDim& d = t.dims[i];
    std::string c = "lm_c" + std::to_string(i), v = values_.expr(d.var);
    out_ << pad << "  const int " << c << " = lm_q % " << d.size << ";\n";
    out_ << pad << "  lm_q = lm_q / " << d.size << ";\n";
    offset += " + " + c + " * " + std::to_string(t.strides[i]);
    switch (d.kind) {
      case StagedDim::BlockX:
        out_ << pad << "  const " << d_.i64 << " " << v << " = lm_gx * " << st.bx << " + " << c << ";\n";
        in += " && " + v + " < " + values_.expr(g_.grid.back().extent);
        break;
      case StagedDim::BlockY:
        out_ << pad << "  const " << d_.i64 << " " << v << " = lm_gy * " << st.by << " + " << c << ";\n";
        in += " && " + v + " < " + values_.expr(g_.grid[g_.grid.size() - 2].extent);
        break;
      case StagedDim::Chunk:
        out_ << pad << "  const " << d_.i64 << " " << v << " = lm_r0 + " << c << ";\n";
        in += " && " + v + " < " + values_.expr(st.loop_extent);
        break;
      case StagedDim::Lane:
      case StagedDim::Uniform: out_ << pad << "  const " << d_.i64 << " " << v << " = " << c << ";\n"; break;
    }
  }
  out_ << pad << "  " << t.name << "[" << offset << "] = (" << in << ") ? " << values_.fill_value(t.load) << " : ("
       << value_type(t.dtype) << ")0;\n";
  out_ << pad << "}\n";
}

// A lane loop in lock step: nested loops shared, leaves once per lane.
void Writer::lanes(const Stmt& s, int depth, bool top) {
  std::string pad(static_cast<size_t>(depth) * 2, ' ');
  out_ << pad << "{  // " << s.var << " in [0, " << s.extent << "): lanes in registers\n";
  values_.push_lane(s.var, s.extent.value());
  block(s.body, depth + 1, top);
  values_.pop_lane();
  out_ << pad << "}\n";
}

void Writer::leaf(const Stmt& s, const std::string& pad) {
  switch (s.kind) {
    case StmtKind::AccInit: values_.declare_acc(s, pad); return;
    case StmtKind::AccUpdate: values_.update_acc(s, pad); return;
    case StmtKind::Store: values_.store(s, pad); return;
    case StmtKind::Bind: values_.bind(s, pad); return;
    case StmtKind::Loop: return;
  }
}

// Every item holds a partial result of `acc`; afterwards every item holds the whole.
void Writer::combine_across_group(int acc, const std::string& pad) {
  const AccInfo& info = values_.acc(acc);
  std::string red = reduction_array(info.dtype);
  std::string name = values_.acc_name(acc);
  std::string a = red + "[lm_lid]", b = red + "[lm_lid + lm_s]";
  std::string combined = info.combine == Combine::Sum ? (info.dtype == DType::Bool ? a + " | " + b : a + " + " + b)
                         : info.dtype == DType::Bool  ? a + " | " + b
                         : info.dtype == DType::F64   ? "lm_maxd(" + a + ", " + b + ")"
                         : info.dtype == DType::I64   ? "lm_maxl(" + a + ", " + b + ")"
                         : is_float(info.dtype)       ? "lm_maxf(" + a + ", " + b + ")"
                                                      : "lm_maxi(" + a + ", " + b + ")";
  out_ << pad << "// " << name << ": the work-group's partial results combined (a tree in local memory)\n";
  out_ << pad << red << "[lm_lid] = (" << reduction_type(red) << ")" << name << ";\n";
  out_ << pad << d_.barrier << "\n";
  out_ << pad << "for (int lm_s = " << g_.schedule.group_size / 2 << "; lm_s > 0; lm_s >>= 1) {\n";
  out_ << pad << "  if (lm_lid < lm_s) " << red << "[lm_lid] = " << combined << ";\n";
  out_ << pad << "  " << d_.barrier << "\n";
  out_ << pad << "}\n";
  out_ << pad << name << " = " << (info.dtype == DType::Bool ? "(" + red + "[0] != 0)" : red + "[0]") << ";\n";
  out_ << pad << d_.barrier << "\n";
}

}  // namespace

std::string print_gpu_kernel(const GpuKernel& k, const Dialect& dialect, const std::string& entry) {
  return Writer(k, dialect).render(entry);
}

}  // namespace lumen::gpu
