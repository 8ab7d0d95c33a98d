// Schedule choice: an action list for each kernel — a test's chooser, or the
// schedule search (lumen/search: tuning cache hits, then measured candidates
// within the budget, else the heuristic).
#pragma once

#include <functional>
#include <vector>

#include "lumen/compiler/pipeline.h"

namespace lumen::compiler {

// Given the kernel's node, returns its action list.
using ScheduleChooser = std::function<std::vector<kernel::Action>(const Graph&, NodeId, const std::vector<bool>&)>;

// Fills p.schedules (one per p.kernel_nodes entry) and p.search_report.
void choose_schedules(Pipeline& p, const search::SearchOptions& options, const ScheduleChooser& choose);

}  // namespace lumen::compiler
