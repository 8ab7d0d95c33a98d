// The state compilation carries from stage to stage (compiler.cpp runs them
// in order): the program's graph and boundary, then the partition into
// kernels, their schedules, the lowered kernels and launches, and finally
// what the backend compiled. Each stage reads what earlier stages wrote.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lumen/backend/compiled_program.h"
#include "lumen/core/graph.h"
#include "lumen/kernel/heuristic.h"
#include "lumen/kernel/schedule.h"
#include "lumen/kernel/slicing.h"
#include "lumen/search/search.h"

namespace lumen::compiler {

// A state update: the kernel computing `copy` (a Contiguous of the value)
// stores into the state's buffer through `view`.
struct StateWrite {
  NodeId copy, state;
  View view;
};

// Rows per chunk for a sliced group (tests choose them; the compiler times them).
using ChunkChooser = std::function<int64_t(const kernel::SliceGroup&)>;

struct CompileReport {
  int kernels = 0;
  int fusion_rounds = 0;
  double graph_seconds = 0, fusion_seconds = 0, schedule_seconds = 0, lower_seconds = 0;
  double codegen_seconds = 0, compile_seconds = 0;
  bool cache_hit = false;
  std::string object_path;
};

// What the recompute stage chose (recompute_stage.h).
struct RecomputeChoice {
  std::string report;             // empty when nothing was considered
  int values = 0;                 // values computed again for their late readers
  int rounds = 0;                 // rewrites kept
  int64_t peak_bytes_before = 0;  // the foreseen largest live set of the graph as given ...
  int64_t peak_bytes = 0;         // ... and of the graph compiled
  double extra_ops = 0;           // ALU ops a run the copies add (the cost model's)
};

struct Pipeline {
  // Program boundary (program_boundary.h).
  std::shared_ptr<Graph> graph;
  std::vector<Edge> outputs;
  std::vector<StateWrite> writes;
  std::vector<bool> needed;
  RecomputeChoice recompute;
  // Partition (fusion): which nodes get a buffer, and the kernels to build
  // (materialised nodes the outputs need, state writes excluded).
  std::vector<bool> materialized;
  std::vector<double> ops_per_element;  // per materialised node: its kernel's ALU ops per element (fusion.h)
  std::vector<NodeId> kernel_nodes;
  // Sliced groups (slice_stage.h): their chunk kernels stand in kernel_nodes
  // for the members; chunk kernel -> (group, member index).
  std::vector<kernel::SliceGroup> groups;
  std::map<NodeId, std::pair<int, size_t>> chunk_member_of;
  std::string slice_report;
  kernel::Target target;
  int64_t l3_bytes = 0;  // the backend's last-level cache (0: unknown)
  // Schedules, one per kernel_nodes entry (schedule_stage.h).
  std::vector<std::vector<kernel::Action>> schedules;
  search::SearchReport search_report;
  // Lowered kernels and launches (lower_stage.h), then entries and module (emit_stage.h).
  backend::CompiledProgram program;
  CompileReport report;
  // What the whole-program check found (confirm_stage.h); empty when it did not run.
  std::string confirmation;
};

}  // namespace lumen::compiler
