#include "lumen/backend/gpu/staging.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <optional>
#include <set>
#include <tuple>

#include "lumen/backend/gpu/gpu_kernel.h"
#include "lumen/core/linear_form.h"

namespace lumen::gpu {

using namespace lumen::kernel;

int64_t Staging::local_bytes() const {
  int64_t n = 0;
  for (const StagedTile& t : tiles) n += t.elements * (t.dtype == DType::F64 || t.dtype == DType::I64 ? 8 : 4);
  return n;
}

namespace {

int64_t planned(const Expr& e) { return e.is_const() ? e.value() : std::min<int64_t>(e.hi(), kMaxDim); }

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

void each_load(const Value& v, const std::function<void(const Value&)>& f) {
  if (!v) return;
  if (v->kind == ValueKind::Load) f(v);
  for (const Value& a : v->args) each_load(a, f);
}

// A candidate loop and what is in scope around it.
struct Candidate {
  const Stmt* loop = nullptr;
  std::map<const ExprNode*, int64_t> lanes;  // lane variables around it and inside it, with their extents
  std::set<const ExprNode*> uniform;  // variables equal on every item of a group
};

class Planner {
 public:
  Planner(const GpuKernel& g, int group_size, int64_t chunk) : g_(g), group_size_(group_size), chunk_(chunk) {
    x_ = g.grid.back().var;
    if (g.grid.size() >= 2) y_ = g.grid[g.grid.size() - 2].var;
    for (size_t i = 0; i + (y_.defined() ? 2 : 1) < g.grid.size(); ++i) uniform_.insert(g.grid[i].var.get());
  }

  Staging plan(int64_t max_bytes) {
    Staging best;
    find(g_.kernel.body, {}, uniform_, [&](const Candidate& c) {
      Staging s = stage(c, max_bytes);
      if (s.active && s.tiles.size() > best.tiles.size()) best = std::move(s);
    });
    return best;
  }

 private:
  bool is_dim(const Expr& v) const {
    return v.lo() == 0 && std::find(g_.kernel.dims.begin(), g_.kernel.dims.end(), v.name()) != g_.kernel.dims.end();
  }

  bool uniform(const Expr& e, const std::set<const ExprNode*>& u) const {
    for (const Expr& v : expr_vars(e)) {
      if (!u.count(v.get()) && !is_dim(v)) return false;
    }
    return true;
  }

  // Calls `f` for every serial loop every item of a group reaches equally often.
  void find(const Block& b, std::map<const ExprNode*, int64_t> lanes, std::set<const ExprNode*> u,
            const std::function<void(const Candidate&)>& f) {
    for (const Stmt& s : b) {
      if (s.kind != StmtKind::Loop) continue;
      if (is_lane(s.loop)) {
        if (!s.extent.is_const()) continue;
        std::map<const ExprNode*, int64_t> inner = lanes;
        inner[s.var.get()] = s.extent.value();
        find(s.body, inner, u, f);
        continue;
      }
      if (!uniform(s.extent, u)) continue;
      Candidate c{&s, lanes, u};
      walk(s.body, [&](const Stmt& t) {
        if (t.kind == StmtKind::Loop && is_lane(t.loop) && t.extent.is_const()) c.lanes[t.var.get()] = t.extent.value();
      });
      f(c);
      std::set<const ExprNode*> inner = u;
      inner.insert(s.var.get());
      find(s.body, lanes, inner, f);
    }
  }

  // The tile dimension `v` gives a read inside loop `c` under `s` (Uniform:
  // read as it is), or nothing: the read cannot be staged.
  std::optional<StagedDim> dim_of(const Expr& v, const Candidate& c, const Staging& s) const {
    if (v == x_) return StagedDim{v, s.bx, s.tx, StagedDim::BlockX};
    if (y_.defined() && v == y_) return StagedDim{v, s.by, s.ty, StagedDim::BlockY};
    if (v == c.loop->var) return StagedDim{v, s.chunk, s.kk, StagedDim::Chunk};
    auto lane = c.lanes.find(v.get());
    if (lane != c.lanes.end()) return StagedDim{v, lane->second, v, StagedDim::Lane};
    if (c.uniform.count(v.get()) || is_dim(v)) return StagedDim{v, 0, Expr(), StagedDim::Uniform};
    return std::nullopt;
  }

  Staging stage(const Candidate& c, int64_t max_bytes) {
    Staging s;
    s.loop_var = c.loop->var;
    s.loop_extent = c.loop->extent;
    blocks(s);
    s.tx = Expr::var("lm_tx", 0, s.bx - 1);
    s.ty = Expr::var("lm_ty", 0, s.by - 1);
    for (int64_t chunk = chunk_; chunk >= 1; chunk /= 2) {
      s.chunk = chunk;
      s.kk = Expr::var("lm_kk", 0, chunk - 1);
      collect(c, s);
      if (s.tiles.empty()) return Staging{};
      if (s.local_bytes() <= max_bytes) {
        s.active = true;
        return s;
      }
    }
    return Staging{};
  }

  // The work-group's block: near square over two axes, no wider than an axis needs.
  void blocks(Staging& s) const {
    int64_t gs = group_size_;
    if (!y_.defined()) {
      s.bx = gs;
      return;
    }
    int log = 0;
    while ((int64_t{1} << (log + 1)) <= gs) ++log;
    s.bx = int64_t{1} << ((log + 1) / 2);
    s.by = gs / s.bx;
    int64_t ex = pow2_at_least(planned(g_.grid.back().extent)), ey = pow2_at_least(planned(g_.grid[g_.grid.size() - 2].extent));
    if (ex < s.bx) {
      s.bx = ex;
      s.by = gs / s.bx;
    } else if (ey < s.by) {
      s.by = ey;
      s.bx = gs / s.by;
    }
  }

  void collect(const Candidate& c, Staging& s) const {
    s.tiles.clear();
    s.reads.clear();
    std::map<std::tuple<int, const ExprNode*, const ExprNode*>, int> seen;
    walk(c.loop->body, [&](const Stmt& st) {
      each_load(st.value, [&](const Value& v) {
        auto key = std::make_tuple(v->buffer, v->index.get(), v->valid.get());
        auto it = seen.find(key);
        if (it != seen.end()) {
          if (it->second >= 0) s.reads[v.get()] = it->second;
          return;
        }
        std::optional<StagedTile> t = tile(v, c, s);
        seen[key] = t ? static_cast<int>(s.tiles.size()) : -1;
        if (!t) return;
        s.reads[v.get()] = static_cast<int>(s.tiles.size());
        t->name = "lm_tile" + std::to_string(s.tiles.size());
        s.tiles.push_back(std::move(*t));
      });
    });
  }

  std::optional<StagedTile> tile(const Value& v, const Candidate& c, const Staging& s) const {
    if (v->dtype == DType::Bool) return std::nullopt;  // tiles hold arithmetic values
    std::vector<Expr> vars = expr_vars(v->index);
    if (v->valid.defined()) {
      for (const Expr& e : expr_vars(v->valid)) {
        if (std::find(vars.begin(), vars.end(), e) == vars.end()) vars.push_back(e);
      }
    }
    StagedTile t;
    t.dtype = v->dtype;
    t.load = v;
    bool chunk = false, bx = false, by = false;
    for (const Expr& var : vars) {
      std::optional<StagedDim> d = dim_of(var, c, s);
      if (!d) return std::nullopt;
      if (d->kind == StagedDim::Uniform) continue;
      chunk = chunk || d->kind == StagedDim::Chunk;
      bx = bx || d->kind == StagedDim::BlockX;
      by = by || d->kind == StagedDim::BlockY;
      t.dims.push_back(*d);
    }
    // Staging pays when the group's items share the read: not per point, and moving with the loop.
    if (!chunk || (bx && (by || !y_.defined()))) return std::nullopt;
    order_and_stride(t);
    return t;
  }

  // Largest global stride outermost (the copy then walks memory in order);
  // grid-axis strides odd, so neighbouring items read different banks.
  static void order_and_stride(StagedTile& t) {
    std::optional<LinearForm> form = LinearForm::of(t.load->index);
    auto stride = [&](const Expr& var) -> int64_t {
      if (form) {
        for (const auto& [term, coefficient] : form->terms) {
          if (term == var) return std::llabs(coefficient);
        }
      }
      return kBoundInf;
    };
    std::stable_sort(t.dims.begin(), t.dims.end(), [&](const StagedDim& a, const StagedDim& b) {
      return stride(a.var) > stride(b.var);
    });
    t.strides.assign(t.dims.size(), 1);
    int64_t next = 1;
    for (size_t i = t.dims.size(); i-- > 0;) {
      bool grid_axis = t.dims[i].kind == StagedDim::BlockX || t.dims[i].kind == StagedDim::BlockY;
      if (grid_axis && next > 1 && next % 2 == 0) ++next;
      t.strides[i] = next;
      next *= t.dims[i].size;
    }
    t.elements = next;
    t.offset = Expr(0);
    for (size_t i = 0; i < t.dims.size(); ++i) t.offset = t.offset + t.dims[i].local * Expr(t.strides[i]);
  }

  const GpuKernel& g_;
  int group_size_;
  int64_t chunk_;
  Expr x_, y_;
  std::set<const ExprNode*> uniform_;
};

}  // namespace

Staging plan_staging(const GpuKernel& g, int group_size, int64_t chunk, int64_t max_bytes) {
  if (g.grid.empty() || chunk <= 0 || group_size <= 0) return Staging{};
  return Planner(g, group_size, chunk).plan(max_bytes);
}

}  // namespace lumen::gpu
