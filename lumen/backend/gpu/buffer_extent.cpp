#include "lumen/backend/gpu/buffer_extent.h"

#include <algorithm>
#include <unordered_map>

#include "lumen/core/expr_eval.h"
#include "lumen/core/simplify.h"
#include "lumen/kernel/affine_range.h"

namespace lumen::gpu {

using namespace lumen::kernel;

BufferExtents::BufferExtents(const Kernel& k) : dims_(k.dims), buffers_(k.buffers.size()) {
  std::vector<Scope> scopes;
  collect(k.body, scopes);
}

void BufferExtents::collect_value(const Value& v, const std::vector<Scope>& scopes) {
  if (!v) return;
  if (v->kind == ValueKind::Load) {
    accesses_.push_back({v->buffer, v->index, v->valid.defined() && !v->valid.is_const(1) ? v->valid : Expr(), scopes});
  }
  for (const Value& a : v->args) collect_value(a, scopes);
}

void BufferExtents::collect(const Block& block, std::vector<Scope>& scopes) {
  size_t depth = scopes.size();
  for (const Stmt& s : block) {
    switch (s.kind) {
      case StmtKind::Loop:
        scopes.push_back({s.var, s.extent});
        collect(s.body, scopes);
        scopes.pop_back();
        break;
      case StmtKind::Store:
        collect_value(s.value, scopes);
        accesses_.push_back({s.buffer, s.index, Expr(), scopes});
        break;
      case StmtKind::Bind:
        collect_value(s.value, scopes);
        scopes.push_back({s.var, s.bound});  // in scope for the rest of this block
        break;
      default: collect_value(s.value, scopes); break;
    }
  }
  scopes.resize(depth);
}

std::vector<int64_t> BufferExtents::elements(const int64_t* dims) const {
  std::vector<int64_t> key(dims, dims + dims_.size());
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
  if (memo_.size() > 64) memo_.clear();  // many shapes: keep the memo small
  return memo_[key] = compute(dims);
}

std::vector<int64_t> BufferExtents::compute(const int64_t* dims) const {
  Bindings bound;
  for (size_t i = 0; i < dims_.size(); ++i) bound[dims_[i]] = dims[i];
  std::vector<int64_t> out(buffers_, 0);
  for (const Access& a : accesses_) {
    std::unordered_map<Expr, Expr, ExprHash> ranged;
    bool runs = true;
    for (const Scope& s : a.scopes) {
      Expr extent = simplify(substitute(substitute(s.extent, bound), ranged));
      int64_t hi = extent.hi();
      if (a.valid.defined()) {  // the mask bounds the variable where the load happens
        kernel::VarRange r = kernel::range_of(a.valid, s.var);
        if (r.hi.defined()) hi = std::min(hi, simplify(substitute(substitute(r.hi, bound), ranged)).hi());
      }
      if (hi <= 0) {
        runs = false;
        break;
      }
      ranged[s.var] = Expr::var(s.var.name() + "#extent", 0, hi - 1);
    }
    if (!runs) continue;
    Expr index = simplify(substitute(substitute(a.index, bound), ranged));
    int64_t& e = out[static_cast<size_t>(a.buffer)];
    e = std::max(e, index.hi() + 1);
  }
  return out;
}

}  // namespace lumen::gpu
