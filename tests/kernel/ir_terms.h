// Test helper: how many reduction terms a lowered kernel adds — executions of
// its accumulator updates, every loop run for its extent at the enclosing
// loops' values (and at the dims bound in `env`). Masked attention that skips
// its masked half adds about half the terms.
#pragma once

#include <cstdint>

#include "lumen/core/expr_eval.h"
#include "lumen/kernel/ir.h"

namespace lumen::testing {

inline int64_t reduction_terms(const kernel::Block& block, Bindings& env) {
  int64_t n = 0;
  for (const kernel::Stmt& s : block) {
    if (s.kind == kernel::StmtKind::AccUpdate) ++n;
    if (s.kind != kernel::StmtKind::Loop) continue;
    int64_t extent = evaluate(s.extent, env);
    for (int64_t i = 0; i < extent; ++i) {
      env[s.var.name()] = i;
      n += reduction_terms(s.body, env);
    }
    env.erase(s.var.name());
  }
  return n;
}

}  // namespace lumen::testing
