#include "lumen/kernel/fuse_sibling_loops.h"

#include <algorithm>
#include <set>

namespace lumen::kernel {

namespace {

// Accumulators a value reads.
void accs_read(const Value& v, std::set<int>& out) {
  if (v->kind == ValueKind::Acc) out.insert(v->acc);
  for (const Value& a : v->args) accs_read(a, out);
}

// The accumulators a loop only adds into, if its body is i32 sum updates alone (else empty);
// `reads`: the accumulators its values read.
std::set<int> integer_sums(const Stmt& loop, const std::vector<DType>& acc_dtype, std::set<int>& reads) {
  std::set<int> writes;
  for (const Stmt& s : loop.body) {
    if (s.kind != StmtKind::AccUpdate || s.combine != Combine::Sum) return {};
    if (s.acc < 0 || static_cast<size_t>(s.acc) >= acc_dtype.size() || acc_dtype[static_cast<size_t>(s.acc)] != DType::I32) return {};
    writes.insert(s.acc);
    accs_read(s.value, reads);
  }
  return writes;
}

bool fusable(const Stmt& s) { return s.kind == StmtKind::Loop && s.loop == LoopKind::Serial; }

int fuse_block(Block& block, const std::vector<DType>& acc_dtype) {
  int fused = 0;
  for (Stmt& s : block) {
    if (s.kind == StmtKind::Loop) fused += fuse_block(s.body, acc_dtype);
  }
  for (size_t i = 0; i < block.size(); ++i) {
    if (!fusable(block[i])) continue;
    std::set<int> reads_a;
    std::set<int> writes_a = integer_sums(block[i], acc_dtype, reads_a);
    if (writes_a.empty()) continue;
    // The next loop past accumulator inits only.
    size_t j = i + 1;
    while (j < block.size() && block[j].kind == StmtKind::AccInit) ++j;
    if (j >= block.size() || !fusable(block[j]) || !(block[j].extent == block[i].extent)) continue;
    std::set<int> reads_b;
    std::set<int> writes_b = integer_sums(block[j], acc_dtype, reads_b);
    if (writes_b.empty()) continue;
    bool independent = true;
    for (int a : writes_a) independent = independent && !reads_b.count(a) && !writes_b.count(a);
    for (int b : writes_b) independent = independent && !reads_a.count(b);
    for (size_t k = i + 1; k < j; ++k) independent = independent && !writes_a.count(block[k].acc);
    if (!independent) continue;
    // The inits move before the first loop (which lands at j - 1), the second loop's body joins
    // the first's, and the fused loop is looked at again (it may take a third sibling).
    std::rotate(block.begin() + static_cast<std::ptrdiff_t>(i), block.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                block.begin() + static_cast<std::ptrdiff_t>(j));
    Stmt& first = block[j - 1];
    for (Stmt& st : substituted(block[j].body, VarMap{{block[j].var, first.var}})) first.body.push_back(std::move(st));
    block.erase(block.begin() + static_cast<std::ptrdiff_t>(j));
    ++fused;
    i = j - 2;  // ++i: the fused loop (unsigned: j - 2 may wrap to the maximum, ++i to 0)
  }
  return fused;
}

// Each accumulator's dtype, from its init.
void acc_dtypes(const Block& block, std::vector<DType>& out) {
  for (const Stmt& s : block) {
    if (s.kind == StmtKind::AccInit && s.acc >= 0) {
      if (static_cast<size_t>(s.acc) >= out.size()) out.resize(static_cast<size_t>(s.acc) + 1, DType::F32);
      out[static_cast<size_t>(s.acc)] = s.dtype;
    }
    if (s.kind == StmtKind::Loop) acc_dtypes(s.body, out);
  }
}

}  // namespace

int fuse_sibling_loops(Kernel& kernel) {
  std::vector<DType> acc_dtype;
  acc_dtypes(kernel.body, acc_dtype);
  return fuse_block(kernel.body, acc_dtype);
}

}  // namespace lumen::kernel
