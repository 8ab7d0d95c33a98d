// Measuring the machine for the cost model (cost_model.h): the compute side
// with lumen's own compiled kernels, the communication side with the
// Communicator the plans would use.
#pragma once

#include <vector>

#include "lumen/compile.h"
#include "lumen/dist/communicator.h"
#include "lumen/dist/cost_model.h"

namespace lumen::dist {

// Bytes/s from a weight-streaming matrix-vector product and FLOP/s from a
// matrix product (decode's and prefill's shapes), compiled with `options`;
// also the cost of running one small program (a segment's fixed cost).
void measure_compute(MachineModel& m, const CompileOptions& options);

struct CollectiveTiming {
  int64_t bytes = 0;
  double seconds = 0;  // median per call
  double busbw = 0;    // bytes * 2 (n - 1) / n / seconds
};
// All-reduces of f32 buffers of `sizes` bytes through `comm`, median of `repeats`. Collective.
std::vector<CollectiveTiming> time_all_reduce(Communicator& comm, const std::vector<int64_t>& sizes, int repeats);

// All-reduce latency and bus bandwidth (4 KiB and 4 MiB), and a 1 MiB
// transfer between ranks 0 and 1. Collective; needs at least 2 ranks.
void measure_communication(MachineModel& m, Communicator& comm);

// Figures for the plan search: compute measured here (unless `measure_compute_side`
// is false: defaults), communication measured over `comm` when it has more
// than one rank (else defaults); every rank takes rank 0's figures, so every
// rank picks the same plan. Collective over `comm` when given.
MachineModel calibrate(const CompileOptions& compile, Communicator* comm, bool measure_compute_side);

}  // namespace lumen::dist
