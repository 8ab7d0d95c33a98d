#include "lumen/kernel/bounded_sum.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "lumen/core/expr_eval.h"
#include "lumen/core/simplify.h"

namespace lumen::kernel {

namespace {


// Counts saturate here: a dynamic extent is counted at its upper bound.
constexpr int64_t kMany = int64_t{1} << 50;

int64_t product(int64_t a, int64_t b) { return (a == 0 || b == 0) ? 0 : (a > kMany / b ? kMany : a * b); }
int64_t total(int64_t a, int64_t b) { return std::min(kMany, a + b); }

int64_t terms(const Block& block, int acc, int64_t simd);

// At most how many values one execution of `s` adds into one lane of `acc`.
// A SIMD loop (extent a multiple of the SIMD width) over an accumulator
// declared outside it keeps one partial sum per SIMD lane, so it adds
// extent / lanes values into each; other lane loops add every value.
int64_t terms(const Stmt& s, int acc, int64_t simd) {
  if (s.kind == StmtKind::AccUpdate) return s.acc == acc ? 1 : 0;
  if (s.kind != StmtKind::Loop) return 0;
  int64_t extent = std::max<int64_t>(0, s.extent.hi());
  if (s.loop == LoopKind::Vector && extent % simd == 0) extent /= simd;
  return product(extent, terms(s.body, acc, simd));
}

int64_t terms(const Block& block, int acc, int64_t simd) {
  int64_t n = 0;
  for (const Stmt& s : block) n = total(n, terms(s, acc, simd));
  return n;
}

bool reads_acc(const Value& v, int acc) {
  if (v->kind == ValueKind::Acc && v->acc == acc) return true;
  return std::any_of(v->args.begin(), v->args.end(), [&](const Value& a) { return reads_acc(a, acc); });
}

bool block_reads_acc(const Block& block, int acc) {
  for (const Stmt& s : block) {
    if (s.value && reads_acc(s.value, acc)) return true;
    if (s.kind == StmtKind::Loop && block_reads_acc(s.body, acc)) return true;
  }
  return false;
}

// `block` with loop variables renamed through `vars` and updates of `from` sent to `to`.
Block renamed(const Block& block, const VarMap& vars, int from, int to) {
  Block out = substituted(block, vars);
  std::function<void(Block&)> redirect = [&](Block& b) {
    for (Stmt& s : b) {
      if (s.kind == StmtKind::AccUpdate && s.acc == from) s.acc = to;
      if (s.kind == StmtKind::Loop) redirect(s.body);
    }
  };
  redirect(out);
  return out;
}

class Bounder {
 public:
  Bounder(Kernel& kernel, int64_t simd, int64_t block) : kernel_(kernel), simd_(simd), block_(block) {}

  int run() {
    visit(kernel_.body);
    return cuts_;
  }

 private:
  // Finds f32 sum accumulators and bounds the loops after their AccInit.
  void visit(Block& block) {
    for (size_t i = 0; i < block.size(); ++i) {
      Stmt& s = block[i];
      if (s.kind == StmtKind::Loop) visit(s.body);
      if (s.kind != StmtKind::AccInit || s.combine != Combine::Sum || s.dtype != DType::F32) continue;
      int acc = s.acc;
      for (size_t j = i + 1; j < block.size(); ++j) {
        if (block[j].kind == StmtKind::Loop && terms(block[j], acc, simd_) > 0) bound(block[j], acc);
      }
    }
  }

  // Makes one execution of `loop` add at most block_ values into `acc`.
  void bound(Stmt& loop, int acc) {
    if (terms(loop, acc, simd_) <= block_ || block_reads_acc(loop.body, acc)) return;
    if (loop.loop != LoopKind::Serial || terms(loop.body, acc, simd_) > block_) {
      for (Stmt& s : loop.body) {
        if (s.kind == StmtKind::Loop) bound(s, acc);
      }
    }
    if (loop.loop != LoopKind::Serial) return;
    int64_t per = terms(loop.body, acc, simd_);
    if (per == 0 || per > block_) return;
    int64_t b = block_ / per;
    if (loop.extent.is_const() && loop.extent.value() <= b) return;
    cut(loop, acc, b);
    bound(loop, acc);  // the blocks' totals may still be too many
  }

  // for v in [0, n): body   becomes
  // for v_blk in [0, ceil(n/b)) { inner = 0; for v_in in [0, min(b, n - v_blk*b)): body(inner); acc += inner }
  void cut(Stmt& loop, int acc, int64_t b) {
    int inner_acc = kernel_.accumulators++;
    std::string name = loop.var.name() + "_" + std::to_string(cuts_++);
    Expr n = loop.extent;
    Expr blocks = simplify((n + (b - 1)) / b);
    Expr outer = Expr::index(name + "_blk", blocks);
    Expr inner_extent = n.is_const() && n.value() % b == 0 ? Expr(b) : simplify(min(Expr(b), n - outer * b));
    Expr inner = Expr::index(name + "_in", inner_extent);
    VarMap vars{{loop.var, simplify(outer * b + inner)}};
    Stmt inner_loop = Stmt::make_loop(inner, inner_extent, LoopKind::Serial, renamed(loop.body, vars, acc, inner_acc));
    inner_loop.unroll_hint = loop.unroll_hint;
    Block body;
    body.push_back(Stmt::acc_init(inner_acc, DType::F32, Combine::Sum));
    body.push_back(std::move(inner_loop));
    body.push_back(Stmt::acc_update(acc, Combine::Sum, acc_value(inner_acc, DType::F32)));
    loop = Stmt::make_loop(outer, blocks, LoopKind::Serial, std::move(body));
  }

  Kernel& kernel_;
  int64_t simd_;
  int64_t block_;
  int cuts_ = 0;
};

}  // namespace

int bound_float_sums(Kernel& kernel, int simd_lanes, int64_t block) {
  return Bounder(kernel, std::max(1, simd_lanes), block).run();
}

}  // namespace lumen::kernel
