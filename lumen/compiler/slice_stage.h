// Sliced execution (lumen/kernel/slicing.h) in the pipeline. After fusion,
// runs of kernels whose internal buffers dwarf what they read and write are
// replaced by chunk kernels (slice_kernels); with a search budget each group's
// chunk is chosen by timing candidates (choose_chunks, from the schedule
// stage); after lowering, each chunk kernel's launches are marked with their
// group and how their buffers move from chunk to chunk (attach_to_group).
#pragma once

#include <map>

#include "lumen/compiler/pipeline.h"

namespace lumen::compiler {

// Finds groups among p.kernel_nodes and puts their chunk kernels in the
// members' places. A chunk budget of 0 in `options` is set from the backend's
// caches; the tuning dims of `search` bind the groups' origin dims to 0.
// LUMEN_SLICE=0 turns slicing off (to compare).
void slice_kernels(Pipeline& p, const kernel::SliceOptions& options, const backend::Capabilities& caps,
                   search::SearchOptions& search);

// Times each group's heuristic chunk against half and twice it: a
// candidate's member kernels are searched with a share of their budget (or
// found in the tuning cache with their times, so a warm compile chooses the
// same without timing), and the least kernel time per run (times x chunks)
// wins. Updates p.kernel_nodes, p.groups and `share` for the winners.
void choose_chunks(Pipeline& p, search::ScheduleSearch& search, std::map<NodeId, double>& share);

// Re-slices each group with the chunk rows `rows` gives it (a test's
// choice in place of choose_chunks' timing); a group that cannot take them
// stays as it is.
void rechunk_groups(Pipeline& p, const ChunkChooser& rows);

// The launches from `first_launch` on (kernel node `n`'s packs, then its
// kernel) run in n's group if it is a chunk kernel: a chunk output is written
// into the original output's buffer, and buffers from outside move with the chunk.
void attach_to_group(Pipeline& p, size_t first_launch, NodeId n);

}  // namespace lumen::compiler
