// Sliced execution: a run of consecutive kernels whose internal buffers are
// much larger than what the run reads and writes is executed in chunks along
// an independent axis, so those buffers hold one chunk at a time.
//
// An axis is independent for a group of kernels when it is a dim of the
// group's output that every member computes at the same coordinate — each
// edge inside the group maps the consumer's coordinate along it to the same
// coordinate of the producer (so no member reduces over it, reads a neighbour
// along it, or reads a fixed position of it). Attention's batch, head and
// query-row axes are such axes; the key axis is not (the softmax and the
// second matmul reduce over it).
//
// The group is rewritten into chunk nodes added to the graph: copies of the
// members (and of the nodes they inline) whose independent dims have the
// chunk's extent — 1 for the axes outside the sliced one, `chunk` for the
// sliced one. Chunk kernels are ordinary kernels (their schedules are chosen
// and cached like any other) that do not know where their chunk lies:
//  - a buffer from outside the group is read at the chunk's offset by moving
//    its pointer (its index moves by the same amount everywhere: linear in
//    the sliced coordinate, linear or separable in the outer ones);
//  - a group output is written through a pointer to the chunk's block of its
//    buffer (the independent dims come first in it, so a chunk is one
//    contiguous block);
//  - internal buffers are chunk-sized and rewritten by every chunk;
//  - a value computed from the element index (an iota such as a causal
//    mask's row) reads the chunk origin from a dynamic dim added to the graph.
//  - a two-place gather (where(c, a, b), kernel/two_place_gather.h) reads its
//    table from chunk buffers: the constants giving its index's position and
//    offset are computed at chunk-relative coordinates (no origin), so the
//    places it reads are those of the chunk's own block.
// A static sliced extent that `chunk` does not divide ends with a chunk
// shifted back to end at the extent: it recomputes a few rows and writes the
// same values again.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lumen/core/graph.h"

namespace lumen::kernel {

struct SliceOptions {
  bool enabled = true;
  int64_t chunk = 0;                     // rows per chunk along the sliced axis; 0: from chunk_bytes
  // A chunk's internal buffers together stay within this; 0: the backend
  // sets it from its caches (4 MiB where nothing does).
  int64_t chunk_bytes = 0;
  int64_t min_rows = 8;                  // a chunk gives every thread rows to work on
  int64_t min_internal_bytes = int64_t{16} << 20;  // groups with smaller internal buffers stay as they are
  int max_members = 8;                   // kernels in one group
  bool always = false;                   // slice every group that can be sliced, worth it or not (tests)
};

// One chunked axis of a group: its extent in the original graph and the
// extent a chunk takes along it.
struct SliceAxis {
  Expr extent;
  int64_t chunk = 1;
  std::string origin_dim;  // the dynamic dim holding the chunk's origin ("" if no kernel reads it)
};

// How a chunk kernel's buffer argument follows the chunk: its pointer moves
// by the sum over the group's axes of offsets[i] (elements), an Expr of the
// variable named chunk_origin_name(i) that holds the chunk's origin along axis i.
struct ChunkMove {
  std::vector<Expr> offsets;
};
std::string chunk_origin_name(size_t axis);

struct SliceGroup {
  std::vector<NodeId> members;        // the original kernels, in launch order
  std::vector<NodeId> chunk_members;  // their chunk copies (materialised), same order
  std::vector<SliceAxis> axes;        // outermost first; the last one is the sliced axis
  // Per chunk member: the buffers (original node ids) it reads or writes
  // outside the group and how each moves. A chunk copy that writes a group
  // output appears here under the output's original node.
  std::vector<std::map<NodeId, ChunkMove>> moves;
  std::map<NodeId, NodeId> output_of;  // chunk copy -> the original group output it writes
  std::map<NodeId, ChunkMove> output_moves;  // group output -> where a chunk's block of it starts
  double full_bytes = 0;               // the internal buffers unsliced ...
  double chunk_bytes = 0;              // ... and for one chunk

  // How many chunks a run takes at these bindings, and the origin of each axis for chunk `c`.
  int64_t chunks(const Bindings& bindings) const;
  std::vector<int64_t> origin(int64_t c, const Bindings& bindings) const;
  std::string describe(const Graph& graph) const;
};

// Finds groups among `kernels` (materialised nodes in launch order) and adds
// their chunk nodes to `graph` (extending `materialized`). `roots` are the
// values read after the kernels run (outputs, state updates); `needed` marks
// nodes some root depends on (nodes past its end count as needed).
std::vector<SliceGroup> slice_groups(Graph& graph, std::vector<bool>& materialized, const std::vector<NodeId>& kernels,
                                     const std::vector<Edge>& roots, const std::vector<bool>& needed,
                                     const SliceOptions& options);

// `group` again with `chunk` rows per chunk along its sliced axis (new chunk
// nodes added to the graph): a candidate the compiler can time against it.
// Nothing if the group does not slice the same way with that chunk.
std::optional<SliceGroup> rechunk(Graph& graph, std::vector<bool>& materialized, const SliceGroup& group,
                                  int64_t chunk, const std::vector<Edge>& roots, const std::vector<bool>& needed);

}  // namespace lumen::kernel
