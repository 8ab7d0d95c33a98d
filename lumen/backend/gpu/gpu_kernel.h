// The GPU lowering of a loop-IR kernel: which loops become the grid and how
// the work of one grid point is shared by the work items of a work-group.
// CUDA and OpenCL print the same GpuKernel (gpu_printer.h); only the
// dialect differs.
//
// Grid: the leading perfect nest of non-lane loops of the kernel body (each
// the only statement of its parent, extents not depending on one another) is
// flattened into one linear grid index; each grid point runs the rest of the
// body. Parallel and serial loops may be peeled: their iterations are
// independent because no accumulator or binding is declared outside them.
// Lane loops stay in the thread (its register tile).
//
// Reduction mode (a schedule choice):
//   Thread — one work item per grid point; reductions run inside the thread
//            (always legal, the fallback).
//   Group  — one work-group per grid point: every top-level loop of the
//            point's body is strided over the group's work items, and an
//            accumulator declared outside such a loop is combined across
//            the group through local memory with barriers afterwards (a
//            tree). Legal when no strided loop reads an accumulator it
//            updates (rolling updates combine otherwise than + or max).
//
// Staged (a Thread-mode option, staging.h): a work-group is a block of grid
// points that copies the operands they share into local memory, a chunk of
// the reduction loop at a time.
//
// Lane loops (unroll / vector) inside a point are printed in lock step when
// `tile_lanes` is set and the region allows it: one copy of each leaf
// statement per lane, nested loops shared — a per-thread register tile (the
// unroll-and-jam the CPU path gets); otherwise as plain loops.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "lumen/backend/gpu/staging.h"
#include "lumen/kernel/ir.h"

namespace lumen::gpu {

enum class ReduceMode { Thread, Group };

struct GpuSchedule {
  ReduceMode reduce = ReduceMode::Thread;
  int group_size = 64;     // work items per work-group (a power of two)
  bool tile_lanes = true;  // lane loops as per-thread register tiles
  int unroll = 1;          // unroll hint for serial loops inside a point (1: none)
  bool stage = false;      // Thread mode: shared operands staged in local memory (staging.h)
  int64_t stage_chunk = 16;  // reduction iterations per fill
  std::string key() const;  // e.g. "thread/64/tile/u1", "thread/256/tile/u1/stage16", for names and tuning keys
};

struct GridAxis {
  Expr var, extent;
};

struct GpuKernel {
  kernel::Kernel kernel;        // body: what one grid point runs (grid loops peeled)
  std::vector<GridAxis> grid;   // outermost first; empty: one point
  GpuSchedule schedule;         // as applied (Group falls back to Thread, stage to none, where illegal)
  Staging staging;              // active when schedule.stage
};

// The GPU form of `k` under `schedule` (float sums bounded as on the CPU).
GpuKernel lower_for_gpu(const kernel::Kernel& k, const GpuSchedule& schedule);

// A schedule for `k` without measuring: Group reductions for row reductions
// (many terms a point, few points, no register tile), else Thread, staged
// where the points of a block share operands of a long reduction loop.
GpuSchedule heuristic_gpu_schedule(const kernel::Kernel& k);

// The statements at a point body's top level, lane loops looked through (their
// bodies run once per lane, in lock step or as a loop of uniform extent): the
// loops Group mode strides over a work-group.
std::vector<const kernel::Stmt*> top_level(const kernel::Block& body);

// Accumulators `loop` updates that are declared outside it: the ones Group
// mode combines across the work-group after striding the loop.
std::set<int> outer_updates(const kernel::Stmt& loop);

// Whether the Group mode is legal for a point body.
bool group_reduce_legal(const kernel::Block& body);

// The number of grid points (product of the grid extents).
Expr grid_points(const GpuKernel& k);

// Work-groups a launch needs: one a point (Group), one a block of points
// (staged), else one per `group_size` points.
Expr work_groups(const GpuKernel& k);

// Work-group memory staging may use (under CUDA's 48 KiB of static shared memory).
inline constexpr int64_t kMaxStagedBytes = 40 * 1024;

}  // namespace lumen::gpu
