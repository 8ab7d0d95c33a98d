// Loops split where a condition on their variable changes (index-set splitting).
//
// A serial loop whose body reads `v < E` (E free of v and of the loops inside)
// — in a load's mask or a select, as masks over concatenations and padding are
// written — runs as two loops, [0, E) and [E, extent) clamped to the loop,
// each with the condition decided: a decode step's attention over the cache's
// `past` rows and its one new row reads each without a select per row; a
// rotary embedding's halves, the cache rows of a pack. Lane loops (vectors,
// unrolled registers) and parallel loops are not split, nor a loop whose split
// point moves with an enclosing lane loop (each lane would need its own trip
// count, and the lanes could no longer run as one vector); at most a few splits a
// kernel, so a body is never copied more than a few times.
#pragma once

#include "lumen/kernel/ir.h"

namespace lumen::kernel {

// Splits the loops of `kernel` as above; returns how many it split.
int split_loops_at_conditions(Kernel& kernel);

}  // namespace lumen::kernel
