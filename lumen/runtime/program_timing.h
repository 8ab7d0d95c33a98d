// Whole-program timing: several compiled versions of one graph (the same
// inputs and outputs, different schedules or rewrites) run on the same
// inputs, interleaved round by round so that drift in the machine's speed
// touches all of them alike, and compared by their median run times. This is
// how the compiler confirms a searched program against the heuristic one: a
// kernel measured alone does not see what a whole run does to the caches.
#pragma once

#include <vector>

#include "lumen/backend/compiled_program.h"
#include "lumen/core/expr_eval.h"

namespace lumen {

struct ProgramTimes {
  std::vector<double> median_ms;  // per program, in the order given
  int rounds = 0;                 // timed runs of each program
  double seconds = 0;             // wall time spent, warm-up included
};

// Inputs are made once for the graph at `dims` (floats random, integers and
// bools 0: always a valid index) and shared by every program; state buffers
// are inputs too (their updates land in the copies made here). Each program
// runs twice to warm up (once when that already took half the time allowed),
// then rounds run each program once, in rotating order, until `max_seconds`
// is spent (at least 3 and at most 25 rounds).
ProgramTimes time_programs(const std::vector<const backend::CompiledProgram*>& programs, const Bindings& dims,
                           double max_seconds);

}  // namespace lumen
