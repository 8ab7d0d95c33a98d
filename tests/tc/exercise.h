// What the comprehension fuzzers do with one text: parse it, check each def,
// and apply it to small tensors (every dim 3, every scalar 2), building the
// graph. Any outcome but success or lumen::Error is a bug.
#pragma once

#include <string>
#include <string_view>

#include "lumen/core/error.h"
#include "lumen/core/graph.h"
#include "lumen/tc/comprehension.h"
#include "lumen/tc/parser.h"

namespace lumen::tc::testing {

// Returns the number of defs applied without an error.
inline int exercise(std::string_view text) {
  int applied = 0;
  std::vector<Def> defs;
  try {
    defs = parse(text);
  } catch (const Error&) {
    return 0;
  }
  for (const Def& def : defs) {
    try {
      Comprehension fn(std::string(text), def);
      Graph g;
      std::vector<Arg> args;
      for (const Param& p : def.params) {
        if (p.scalar) {
          args.emplace_back(std::in_place_index<1>, 2.0);
          continue;
        }
        Shape shape(p.dims.size(), Expr(3));
        args.emplace_back(g.input(p.name, shape, p.dtype));
      }
      fn(args);
      ++applied;
    } catch (const Error&) {
    }
  }
  return applied;
}

}  // namespace lumen::tc::testing
