// Staging in work-group memory: the GPU form of cache blocking.
//
// A point's reduction loop (a contraction's k) reads operands that
// neighbouring grid points read too: in a matmul, every point of one output
// row reads the same row of A. Under the Staged schedule a work-group is a
// block of bx × by grid points over the last two grid axes (bx over the
// last), and the reduction loop runs in chunks: at the start of each chunk
// the group's work items copy, together and coalesced, every operand element
// the group will read during the chunk into local memory (a "tile"), wait at
// a barrier, and then read the tiles instead of global memory.
//
// Which reads are staged is derived from their index expressions, never
// from what the kernel computes: a Load inside the loop is staged when its
// index (and validity) depend only on the two blocked grid axes (not both),
// lane variables (the register tile), the loop's own variable and values
// uniform across the group (outer grid axes, enclosing serial loops, dims).
// A tile has one dimension per such variable, laid out with the variable of
// smallest global stride fastest (so the copy is coalesced), and the strides
// of the grid-axis dimensions made odd (so reads by neighbouring items fall
// in different banks). Elements outside the grid or past the loop's end are
// filled with 0 and never stored: items past the grid's edge compute on a
// clamped point and skip their stores.
//
// Legal when the loop and every loop around it run the same number of
// iterations on every item of the group (extents uniform), so every item
// reaches every barrier.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lumen/kernel/ir.h"

namespace lumen::gpu {

struct GpuKernel;

struct StagedDim {
  Expr var;      // the kernel variable this dimension runs over
  int64_t size;  // elements: the block, the lane extent or the chunk
  Expr local;    // what a body read indexes it with (tx, ty, the lane variable, kk)
  enum Kind { BlockX, BlockY, Lane, Chunk, Uniform } kind;  // Uniform: read as it is, not a dimension
};

struct StagedTile {
  std::string name;             // lm_tile0, ...
  DType dtype;                  // of the value held (a load's value type)
  kernel::Value load;           // the read it holds (index and validity over the dims' variables)
  std::vector<StagedDim> dims;  // outermost first; the copy walks them in this order, last fastest
  std::vector<int64_t> strides;
  int64_t elements = 0;         // allocated, padding included
  Expr offset;                  // a body read's element: Σ local · stride
};

struct Staging {
  bool active = false;
  Expr loop_var, loop_extent;  // the staged reduction loop
  int64_t chunk = 0;           // its iterations per fill
  Expr kk;                     // position inside the chunk
  int64_t bx = 1, by = 1;      // the work-group's block of grid points (bx over the last axis)
  Expr tx, ty;                 // a work item's place in the block
  std::vector<StagedTile> tiles;
  std::map<const kernel::ValueNode*, int> reads;  // load node -> tile
  int64_t local_bytes() const;
};

// The staging of `g` (inactive when nothing can be staged): `group_size`
// work items, chunks of up to `chunk` iterations, tiles within `max_bytes`.
Staging plan_staging(const GpuKernel& g, int group_size, int64_t chunk, int64_t max_bytes);

}  // namespace lumen::gpu
