// Confirmation: a program the search changed (schedules, slicing chunks) is
// timed whole against the program compiled without search, the two interleaved
// run by run, and the searched one is kept only when it is faster. Kernels
// timed one at a time cannot see what a whole run does to the caches (a
// model whose weights fit in L3 reads them warm from one run to the next);
// this check can. The decision is remembered in the tuning cache under the
// pair of programs, so a warm compile times nothing.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "lumen/backend/backend.h"
#include "lumen/compiler/pipeline.h"

namespace lumen::compiler {

// Median run time (ms) of each program on the same inputs, at `dims`,
// spending about `seconds` (lumen/runtime/program_timing.h provides it;
// compile.cpp passes it in, so the compiler does not depend on the runtime).
using ProgramTimer = std::function<std::vector<double>(const std::vector<const backend::CompiledProgram*>&,
                                                       const Bindings& dims, double seconds)>;

// A searched program is kept only when it is at least this much faster (0.99: 1%).
inline constexpr double kConfirmMargin = 0.99;

// Replaces p.program with the heuristic program (`make_heuristic`: the same
// graph compiled with budget 0 and no tuning cache — heuristic slicing chunks
// and schedules) when that runs faster; writes what it found to
// p.confirmation. Does nothing without a budget or a timer, or when the
// program is the heuristic's.
void confirm_against_heuristic(Pipeline& p, const search::SearchOptions& options, const ProgramTimer& timer,
                               const std::shared_ptr<const backend::Backend>& backend,
                               const std::function<backend::CompiledProgram()>& make_heuristic);

}  // namespace lumen::compiler
