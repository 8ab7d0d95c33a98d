#include "lumen/compiler/lower_stage.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>

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

// The parameters a launch reads (with their bytes), or nothing when it reads anything else.
std::optional<std::pair<std::vector<std::string>, int64_t>> parameters_read(const Pipeline& p, const backend::Launch& l) {
  std::vector<std::string> names;
  int64_t read = 0;
  for (size_t b = 1; b < l.buffers.size(); ++b) {
    NodeId id = l.buffers[b];
    const Node* node = id >= 0 ? &p.graph->node(id) : nullptr;
    if (!node || node->op != Op::Input || !node->parameter || node->persistent) return std::nullopt;
    int64_t numel = 1;
    for (const Expr& d : node->shape) numel *= d.is_const() ? d.value() : 0;
    read += numel * static_cast<int64_t>(dtype_size(node->dtype));
    names.push_back(node->name);
  }
  if (names.empty()) return std::nullopt;
  return std::make_pair(names, read);
}

// A pack that reads only parameters and makes no more bytes than it reads
// (a relayout, not a dequantization) is done once and kept between runs,
// outside the arena, until one of its parameters is set again.
void find_kept_packs(Pipeline& p) {
  backend::CompiledProgram& prog = p.program;
  for (const backend::Launch& l : prog.launches) {
    if (l.computes != backend::kPackLaunch || l.group >= 0) continue;  // a chunk's pack moves with the chunk
    backend::Scratch& sb = prog.scratch[static_cast<size_t>(-1 - l.buffers[0])];
    if (!sb.elements.is_const()) continue;
    auto read = parameters_read(p, l);
    int64_t made = sb.elements.value() * static_cast<int64_t>(dtype_size(sb.dtype));
    if (!read || made > read->second) continue;
    sb.kept_inputs = read->first;
  }
}

// A kernel that reads only parameters and makes no more bytes than it reads (a relayout of a
// weight: the int8 dot products' rows interleaved) is a pack too: its value moves out of the arena
// into a scratch buffer kept between runs, and the kernel runs again only when one of its
// parameters is set again.
void keep_parameter_relayouts(Pipeline& p) {
  backend::CompiledProgram& prog = p.program;
  std::set<NodeId> outputs;
  for (const Edge& e : p.outputs) outputs.insert(e.node);
  for (const StateWrite& w : p.writes) outputs.insert(w.copy);
  for (backend::Launch& l : prog.launches) {
    const NodeId node = l.computes;
    if (node < 0 || l.group >= 0 || outputs.count(node)) continue;
    const Node& n = p.graph->node(node);
    int64_t numel = 1;
    for (const Expr& d : n.shape) numel = d.is_const() && numel >= 0 ? numel * d.value() : -1;
    auto read = parameters_read(p, l);
    if (numel < 0 || !read || numel * static_cast<int64_t>(dtype_size(n.dtype)) > read->second) continue;
    bool grouped_reader = false;
    for (const backend::Launch& other : prog.launches) {
      if (other.group >= 0 && std::count(other.buffers.begin(), other.buffers.end(), node)) grouped_reader = true;
    }
    if (grouped_reader) continue;
    const NodeId kept = -1 - static_cast<NodeId>(prog.scratch.size());
    prog.scratch.push_back({Expr(numel), n.dtype, read->first});
    for (backend::Launch& other : prog.launches) std::replace(other.buffers.begin(), other.buffers.end(), node, kept);
    l.computes = backend::kPackLaunch;
  }
}

}  // namespace

void lower_kernels(Pipeline& p) {
  for (size_t i = 0; i < p.kernel_nodes.size(); ++i) lower_kernel(p, p.kernel_nodes[i], p.schedules[i]);
  for (const StateWrite& w : p.writes) lower_write(p, w);
  find_kept_packs(p);
  keep_parameter_relayouts(p);
}

}  // namespace lumen::compiler
