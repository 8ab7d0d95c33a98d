#include "lumen/backend/gpu/gpu_kernel.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <optional>
#include <set>

#include "lumen/core/expr_eval.h"
#include "lumen/core/linear_form.h"
#include "lumen/core/simplify.h"
#include "lumen/kernel/bounded_sum.h"

namespace lumen::gpu {

using namespace lumen::kernel;

namespace {

bool mentions_any(const Expr& e, const std::vector<GridAxis>& grid) {
  if (!e.defined()) return false;
  for (const Expr& v : expr_vars(e)) {
    for (const GridAxis& g : grid) {
      if (g.var == v) return true;
    }
  }
  return false;
}

bool reads_acc(const Value& v, const std::set<int>& accs) {
  if (!v) return false;
  if (v->kind == ValueKind::Acc && accs.count(v->acc)) return true;
  return std::any_of(v->args.begin(), v->args.end(), [&](const Value& a) { return reads_acc(a, accs); });
}

// The block of bounded float sums: kSumBlock, or LUMEN_SUM_BLOCK (as the CPU backend).
int64_t sum_block() {
  const char* v = std::getenv("LUMEN_SUM_BLOCK");
  int64_t b = v ? std::atoll(v) : 0;
  return b > 0 ? b : kSumBlock;
}

int64_t planned(const Expr& e, int64_t dynamic) {
  if (e.is_const()) return e.value();
  return e.hi() >= kMaxDim ? dynamic : e.hi();
}

}  // namespace

std::string GpuSchedule::key() const {
  return std::string(reduce == ReduceMode::Group ? "group/" : "thread/") + std::to_string(group_size) +
         (tile_lanes ? "/tile" : "/flat") + "/u" + std::to_string(unroll) +
         (stage ? "/stage" + std::to_string(stage_chunk) : "");
}

std::set<int> outer_updates(const Stmt& loop) {
  std::set<int> declared, updated;
  walk(loop.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::AccInit) declared.insert(s.acc);
    if (s.kind == StmtKind::AccUpdate) updated.insert(s.acc);
  });
  std::set<int> out;
  for (int a : updated) {
    if (!declared.count(a)) out.insert(a);
  }
  return out;
}

std::vector<const Stmt*> top_level(const Block& body) {
  std::vector<const Stmt*> out;
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::Loop && is_lane(s.loop)) {
      for (const Stmt* t : top_level(s.body)) out.push_back(t);
    } else {
      out.push_back(&s);
    }
  }
  return out;
}

bool group_reduce_legal(const Block& body) {
  std::set<int> combined;  // accumulators already combined after an earlier loop
  bool any_loop = false;
  for (const Stmt* p : top_level(body)) {
    const Stmt& s = *p;
    if (s.kind == StmtKind::AccUpdate) return false;  // every item would add it
    if (s.kind != StmtKind::Loop) continue;
    any_loop = true;
    std::set<int> outer = outer_updates(s);
    bool reads = false;
    walk(s.body, [&](const Stmt& u) { reads = reads || reads_acc(u.value, outer); });
    if (reads) return false;  // a rolling update: not a plain + or max across items
    for (int a : outer) {
      if (!combined.insert(a).second) return false;  // combined twice would count earlier terms again
    }
  }
  return any_loop;
}

// Whether a point's reduction reads memory that neighbouring points (one
// work item each) read far apart while the reduction walks it contiguously,
// and staging does not copy it: a matrix-vector product's rows.
static bool uncoalesced_reads(const GpuKernel& g) {
  if (g.grid.empty()) return false;
  const Expr& x = g.grid.back().var;
  bool found = false;
  for (const Stmt* p : top_level(g.kernel.body)) {
    if (p->kind != StmtKind::Loop || outer_updates(*p).empty()) continue;
    std::vector<Expr> inner = {p->var};
    walk(p->body, [&](const Stmt& u) {
      if (u.kind == StmtKind::Loop) inner.push_back(u.var);
    });
    std::function<void(const Value&)> check = [&](const Value& v) {
      if (!v) return;
      for (const Value& a : v->args) check(a);
      if (v->kind != ValueKind::Load || (g.staging.active && g.staging.reads.count(v.get()))) return;
      std::optional<LinearForm> f = LinearForm::of(v->index);
      if (!f) return;
      int64_t across = 0;
      bool along = false;
      for (const auto& [term, c] : f->terms) {
        if (term == x) across = std::llabs(c);
        for (const Expr& r : inner) along = along || (term == r && std::llabs(c) == 1);
      }
      found = found || (across >= 8 && along);
    };
    walk(p->body, [&](const Stmt& u) { check(u.value); });
  }
  return found;
}

namespace {

// `k` with its leading perfect loop nest peeled into the grid.
GpuKernel peel_grid(const Kernel& k, const GpuSchedule& schedule) {
  GpuKernel g;
  g.kernel = k;
  g.schedule = schedule;
  Block body = k.body;
  // Lane loops stay inside the thread: they are its register tile. Gathered
  // indices bound before a loop (an embedding row read as a residual) are
  // bound again in each of its iterations: a bind is a pure read and check.
  while (true) {
    size_t binds = 0;
    while (binds < body.size() && body[binds].kind == StmtKind::Bind) ++binds;
    if (body.size() != binds + 1) break;
    const Stmt& loop = body[binds];
    if (loop.kind != StmtKind::Loop || is_lane(loop.loop) || mentions_any(loop.extent, g.grid)) break;
    bool extent_reads_bind = false;
    for (size_t b = 0; b < binds; ++b) {
      for (const Expr& v : expr_vars(loop.extent)) extent_reads_bind = extent_reads_bind || v == body[b].var;
    }
    if (extent_reads_bind) break;
    g.grid.push_back({loop.var, loop.extent});
    Block inner(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(binds));
    inner.insert(inner.end(), loop.body.begin(), loop.body.end());
    body = std::move(inner);
  }
  g.kernel.body = std::move(body);
  return g;
}

}  // namespace

GpuKernel lower_for_gpu(const Kernel& k, const GpuSchedule& schedule) {
  GpuKernel g = peel_grid(k, schedule);
  if (g.schedule.reduce == ReduceMode::Group && !group_reduce_legal(g.kernel.body)) {
    g.schedule.reduce = ReduceMode::Thread;
  }
  // A work-group's partial sums already split a long sum (terms / group size
  // each, then a tree); a thread's own reduction is bounded as on the CPU.
  if (g.schedule.reduce == ReduceMode::Thread) bound_float_sums(g.kernel, 1, sum_block());
  if (g.schedule.stage && g.schedule.reduce == ReduceMode::Thread) {
    g.staging = plan_staging(g, g.schedule.group_size, g.schedule.stage_chunk, kMaxStagedBytes);
  }
  if (!g.staging.active) g.schedule.stage = false;
  return g;
}

// Accumulators a point keeps per lane: the product of the lane loops around its
// accumulators (a matmul's 6 x 16 tile: 96; a norm's sum: 1).
static int64_t register_tile(const Block& body, int64_t lanes) {
  int64_t most = 0;
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::AccInit) most = std::max(most, lanes);
    if (s.kind == StmtKind::Loop && is_lane(s.loop)) {
      most = std::max(most, register_tile(s.body, lanes * (s.extent.is_const() ? s.extent.value() : 64)));
    }
  }
  return most;
}

GpuSchedule heuristic_gpu_schedule(const Kernel& k) {
  GpuSchedule s;
  GpuKernel peeled = peel_grid(k, GpuSchedule{});
  int64_t points = planned(simplify(grid_points(peeled)), 4096);
  int64_t terms = 0;
  for (const Stmt* st : top_level(peeled.kernel.body)) {
    if (st->kind == StmtKind::Loop && !outer_updates(*st).empty()) terms = std::max(terms, planned(st->extent, 1024));
  }
  bool legal = group_reduce_legal(peeled.kernel.body);
  GpuSchedule group = s;
  group.reduce = ReduceMode::Group;
  group.group_size = terms >= 4096 ? 128 : 64;
  // Row reductions (few long rows: softmax, norms) share a row across a
  // work-group; contractions with a register tile keep their tile per thread.
  bool tiled = register_tile(peeled.kernel.body, 1) > 4;
  bool rows = (terms >= 256 && points <= 4096) || (terms >= 64 && points <= 256);
  if (rows && !tiled && legal) return group;
  // Few points, each running loops of many independent iterations (a decode
  // step's scores over the cache, one point a head): the group shares them.
  int64_t iterations = 0;
  for (const Stmt* st : top_level(peeled.kernel.body)) {
    if (st->kind == StmtKind::Loop && outer_updates(*st).empty()) iterations = std::max(iterations, planned(st->extent, 1024));
  }
  if (legal && points <= 1024 && iterations >= 32) return group;
  // Points that share operands of a long reduction loop read them once per block.
  GpuSchedule staged = s;
  staged.stage = true;
  staged.group_size = 256;
  GpuKernel g = lower_for_gpu(k, staged);
  // Rows read far apart by neighbouring points (a matrix-vector product) are
  // read together, coalesced, when a work-group shares each point.
  if (legal && terms >= 64 && uncoalesced_reads(g)) return group;
  if (g.staging.active && points >= 256 && planned(g.staging.loop_extent, 1024) >= 32) return staged;
  return s;
}

Expr grid_points(const GpuKernel& k) {
  Expr n(1);
  for (const GridAxis& a : k.grid) n = n * a.extent;
  return n;
}

Expr work_groups(const GpuKernel& k) {
  if (k.schedule.reduce == ReduceMode::Group) return grid_points(k);
  if (!k.staging.active) return (grid_points(k) + Expr(k.schedule.group_size - 1)) / Expr(k.schedule.group_size);
  const Staging& s = k.staging;
  size_t blocked = k.grid.size() >= 2 ? 2 : 1;  // the last two grid axes are blocked
  Expr n = (k.grid.back().extent + Expr(s.bx - 1)) / Expr(s.bx);
  if (blocked == 2) n = n * ((k.grid[k.grid.size() - 2].extent + Expr(s.by - 1)) / Expr(s.by));
  for (size_t i = 0; i + blocked < k.grid.size(); ++i) n = n * k.grid[i].extent;
  return n;
}

}  // namespace lumen::gpu
