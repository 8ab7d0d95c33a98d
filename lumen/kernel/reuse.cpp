#include "lumen/kernel/reuse.h"

#include <functional>
#include <unordered_map>

#include "lumen/core/expr_eval.h"
#include "lumen/core/simplify.h"

namespace lumen::kernel {

namespace {


bool same_value(const Value& a, const Value& b) {
  if (a == b) return true;
  if (a->kind != b->kind || a->dtype != b->dtype || a->number != b->number || a->index != b->index ||
      a->valid != b->valid || a->buffer != b->buffer || a->op != b->op || a->acc != b->acc ||
      a->args.size() != b->args.size()) {
    return false;
  }
  for (size_t i = 0; i < a->args.size(); ++i) {
    if (!same_value(a->args[i], b->args[i])) return false;
  }
  return true;
}

// v with every occurrence of `target` replaced by `with`; sets *found if any.
Value replace(const Value& v, const Value& target, const Value& with, bool* found = nullptr) {
  if (same_value(v, target)) {
    if (found) *found = true;
    return with;
  }
  if (v->args.empty()) return v;
  ValueNode n = *v;
  bool changed = false;
  for (Value& a : n.args) {
    Value r = replace(a, target, with, found);
    changed = changed || r != a;
    a = r;
  }
  return changed ? std::make_shared<const ValueNode>(std::move(n)) : v;
}

bool any_node(const Value& v, const std::function<bool(const ValueNode&)>& f) {
  if (f(*v)) return true;
  for (const Value& a : v->args) {
    if (any_node(a, f)) return true;
  }
  return false;
}

bool transcendental(const Value& v) {
  return any_node(v, [](const ValueNode& n) {
    return n.kind == ValueKind::Unary && (n.op == Op::Exp2 || n.op == Op::Log2 || n.op == Op::Sin);
  });
}

bool touches(const Stmt& s, int buffer) {
  if (s.kind == StmtKind::Store && s.buffer == buffer) return true;
  if (s.value && any_node(s.value, [&](const ValueNode& n) { return n.kind == ValueKind::Load && n.buffer == buffer; })) {
    return true;
  }
  for (const Stmt& b : s.body) {
    if (touches(b, buffer)) return true;
  }
  return false;
}

// A perfect loop nest ending in one statement: the loops outermost first.
std::vector<Stmt*> nest(Stmt& s) {
  std::vector<Stmt*> loops;
  Stmt* at = &s;
  while (at->kind == StmtKind::Loop && at->body.size() == 1) {
    loops.push_back(at);
    at = &at->body[0];
  }
  return at->kind == StmtKind::Loop ? std::vector<Stmt*>{} : loops;
}

Stmt& leaf(const std::vector<Stmt*>& loops) { return loops.back()->body[0]; }

// Tries to pair reduction nest `red` with the later output nest `out`.
bool pair(const std::vector<Stmt*>& red, const std::vector<Stmt*>& out, const std::vector<BufferArg>& buffers) {
  if (red.empty() || red.size() != out.size()) return false;
  Stmt& update = leaf(red);
  Stmt& store = leaf(out);
  if (update.kind != StmtKind::AccUpdate || store.kind != StmtKind::Store) return false;
  if (!buffers.at(static_cast<size_t>(store.buffer)).output) return false;
  VarMap to_out, to_red;
  for (size_t i = 0; i < red.size(); ++i) {
    if (red[i]->extent != out[i]->extent || red[i]->loop != out[i]->loop) return false;
    to_out[red[i]->var] = out[i]->var;
    to_red[out[i]->var] = red[i]->var;
  }
  // E: the summed value (under a cast to the accumulator's dtype, if any).
  Value e = update.value->kind == ValueKind::Cast ? update.value->args[0] : update.value;
  DType stored = buffers.at(static_cast<size_t>(store.buffer)).dtype;
  if (e->dtype != stored || !transcendental(e)) return false;
  if (any_node(e, [&](const ValueNode& n) { return n.kind == ValueKind::Load && n.buffer == store.buffer; })) return false;
  Value kept = load(store.buffer, stored, store.index, Expr(1));
  bool found = false;
  Value rewritten = replace(store.value, substituted(e, to_out), kept, &found);
  if (!found) return false;
  Expr at = simplify(substitute(store.index, to_red));
  Value reread = load(store.buffer, stored, at, Expr(1));
  Stmt keep = Stmt::store(store.buffer, at, e);
  update.value = replace(update.value, e, reread);
  Block& body = red.back()->body;
  body.insert(body.begin(), std::move(keep));
  store.value = rewritten;
  return true;
}

int rewrite_block(Block& block, const std::vector<BufferArg>& buffers) {
  int count = 0;
  for (Stmt& s : block) {
    if (s.kind == StmtKind::Loop) count += rewrite_block(s.body, buffers);
  }
  for (size_t j = 0; j < block.size(); ++j) {
    std::vector<Stmt*> red = nest(block[j]);
    if (red.empty() || leaf(red).kind != StmtKind::AccUpdate) continue;
    for (size_t k = j + 1; k < block.size(); ++k) {
      std::vector<Stmt*> out = nest(block[k]);
      if (!out.empty() && leaf(out).kind == StmtKind::Store) {
        bool clear = true;
        for (size_t m = j + 1; m < k && clear; ++m) clear = !touches(block[m], leaf(out).buffer);
        if (clear && pair(red, out, buffers)) ++count;
        break;
      }
    }
  }
  return count;
}

}  // namespace

int reuse_reduction_operands(Kernel& kernel) { return rewrite_block(kernel.body, kernel.buffers); }

}  // namespace lumen::kernel
