#include "lumen/compiler/lower_stage.h"

#include <map>
#include <optional>
#include <set>
#include <string>

#include "lumen/compiler/buffer_lives.h"
#include "lumen/compiler/slice_stage.h"
#include "lumen/kernel/heuristic.h"
#include "lumen/kernel/lower.h"

namespace lumen::compiler {

namespace {

void add_launch(backend::CompiledProgram& prog, kernel::Kernel k, std::vector<NodeId> buffers, NodeId computes) {
  backend::Launch l;
  l.kernel = prog.kernels.size();
  l.buffers = std::move(buffers);
  l.computes = computes;
  prog.launches.push_back(std::move(l));
  prog.kernels.push_back(std::move(k));
}

std::string next_name(const backend::CompiledProgram& prog) { return "k" + std::to_string(prog.kernels.size()); }

void lower_kernel(Pipeline& p, NodeId n, const std::vector<kernel::Action>& actions) {
  backend::CompiledProgram& prog = p.program;
  kernel::Schedule schedule = kernel::Schedule::from_actions(p.graph->node(n).shape, actions);
  kernel::LowerOptions options;
  options.split_loops = true;
  kernel::LoweredKernel lk = kernel::lower(*p.graph, n, p.materialized, schedule, next_name(prog), options);
  // Scratch buffers get program-wide numbers.
  auto global = [&](std::vector<NodeId> buffers) {
    for (NodeId& b : buffers) {
      if (b < 0) b = -1 - static_cast<NodeId>(prog.scratch.size() + static_cast<size_t>(-1 - b));
    }
    return buffers;
  };
  size_t first = prog.launches.size();
  for (size_t i = 0; i < lk.pre_kernels.size(); ++i) {
    add_launch(prog, std::move(lk.pre_kernels[i]), global(lk.pre_buffer_nodes[i]), backend::kPackLaunch);
  }
  add_launch(prog, std::move(lk.kernel), global(lk.buffer_nodes), n);
  attach_to_group(p, first, n);
  for (const kernel::ScratchBuffer& sb : lk.scratch) prog.scratch.push_back({sb.elements, sb.dtype, {}});
}

void lower_write(Pipeline& p, const StateWrite& w) {
  const Node& copy = p.graph->node(w.copy);
  kernel::LowerOptions lo;
  lo.store_node = w.state;
  lo.store_view = w.view;
  lo.split_loops = true;
  kernel::Schedule schedule =
      kernel::Schedule::from_actions(copy.shape, kernel::heuristic_actions(*p.graph, w.copy, p.materialized, p.target));
  kernel::LoweredKernel lk = kernel::lower(*p.graph, w.copy, p.materialized, schedule, next_name(p.program), lo);
  add_launch(p.program, std::move(lk.kernel), lk.buffer_nodes, backend::kWriteLaunch);
}

// What a launch derives from, when it reads (its buffers after the first) only parameters and
// `kept` values.
std::optional<ParameterReads> parameters_read(const Pipeline& p, const backend::Launch& l, const KeptValues& kept) {
  return parameters_only(*p.graph, std::vector<NodeId>(l.buffers.begin() + 1, l.buffers.end()), kept);
}

// A pack derived from parameters alone (worth_keeping) is done once and kept between runs,
// outside the arena, until one of its parameters is set again.
void find_kept_packs(Pipeline& p, const KeptValues& derived) {
  backend::CompiledProgram& prog = p.program;
  for (const backend::Launch& l : prog.launches) {
    if (l.computes != backend::kPackLaunch || l.group >= 0) continue;  // a chunk's pack moves with the chunk
    backend::Scratch& sb = prog.scratch[static_cast<size_t>(-1 - l.buffers[0])];
    if (!sb.elements.is_const() || !sb.kept_inputs.empty()) continue;
    auto read = parameters_read(p, l, derived);
    if (read && worth_keeping(*read, sb.elements.value(), sb.dtype)) sb.kept_inputs = read->names;
  }
}

// A kernel derived from parameters alone (a relayout of a weight: the int8 dot products' rows
// interleaved; a weight divided by its kept norm) is a pack too: its value moves out of the
// arena into a scratch buffer kept between runs, and the kernel runs again only when one of its
// parameters is set again. Kernels reading such values are judged in run order, so a chain of
// them is kept whole.
KeptValues keep_parameter_relayouts(Pipeline& p) {
  backend::CompiledProgram& prog = p.program;
  // Values that stay where they are: outputs, state writes' copies, and what sliced groups read.
  std::set<NodeId> fixed;
  for (const Edge& e : p.outputs) fixed.insert(e.node);
  for (const StateWrite& w : p.writes) fixed.insert(w.copy);
  for (const backend::Launch& l : prog.launches) {
    if (l.group >= 0) fixed.insert(l.buffers.begin(), l.buffers.end());
  }
  std::map<NodeId, NodeId> kept;  // node -> the scratch buffer that keeps it
  KeptValues derived;             // node -> what it derives from
  for (backend::Launch& l : prog.launches) {
    if (l.computes < 0 || l.group >= 0 || fixed.count(l.computes)) continue;
    const Node& n = p.graph->node(l.computes);
    auto read = parameters_read(p, l, derived);
    std::optional<ParameterReads> value = read ? kept_value(*read, n) : std::nullopt;
    if (!value) continue;
    derived[l.computes] = *value;
    kept[l.computes] = -1 - static_cast<NodeId>(prog.scratch.size());
    prog.scratch.push_back({Expr(static_numel(n.shape)), n.dtype, read->names});
    l.computes = backend::kPackLaunch;
  }
  for (backend::Launch& l : prog.launches) {
    for (NodeId& b : l.buffers) {
      auto it = kept.find(b);
      if (it != kept.end()) b = it->second;
    }
  }
  KeptValues by_buffer;  // the kept values under their scratch buffers' numbers
  for (const auto& [node, buffer] : kept) by_buffer[buffer] = derived[node];
  return by_buffer;
}

}  // namespace

void lower_kernels(Pipeline& p) {
  for (size_t i = 0; i < p.kernel_nodes.size(); ++i) lower_kernel(p, p.kernel_nodes[i], p.schedules[i]);
  for (const StateWrite& w : p.writes) lower_write(p, w);
  KeptValues derived = keep_parameter_relayouts(p);
  find_kept_packs(p, derived);
}

}  // namespace lumen::compiler
