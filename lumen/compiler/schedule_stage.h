// Schedule choice: an action list for each kernel — a test's chooser, or the
// schedule search (lumen/search: tuning cache hits, then measured candidates
// within the budget, else the heuristic).
#pragma once

#include <functional>
#include <vector>

#include "lumen/compiler/pipeline.h"
#include "lumen/compiler/progress.h"

namespace lumen::compiler {

// Given the kernel's node, returns its action list.
using ScheduleChooser = std::function<std::vector<kernel::Action>(const Graph&, NodeId, const std::vector<bool>&)>;

// A program whose parameters take at most this share of the last-level cache
// finds them there on every run after the first: the search times kernels
// with weights warm (the rest of the cache holds activations).
inline constexpr double kWarmParameterShare = 0.75;

// Bytes of the parameters the program needs (dynamic dims at the tuning size).
int64_t parameter_bytes(const Graph& graph, const std::vector<bool>& needed, const search::SearchOptions& options);

// Fills p.schedules (one per p.kernel_nodes entry) and p.search_report;
// shows kernels done and search time spent on `progress`.
void choose_schedules(Pipeline& p, const search::SearchOptions& options, const ScheduleChooser& choose,
                      ProgressLine& progress);

}  // namespace lumen::compiler
