#include "lumen/compiler/slice_stage.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>

#include "lumen/core/error.h"
#include "lumen/kernel/printer.h"

namespace lumen::compiler {

namespace {

std::vector<Edge> roots_of(const Pipeline& p) {
  std::vector<Edge> roots = p.outputs;
  for (const StateWrite& w : p.writes) roots.push_back(p.graph->node(w.copy).inputs[0]);
  return roots;
}

void use_group(Pipeline& p, size_t g, const kernel::SliceGroup& group) {
  for (size_t m = 0; m < group.members.size(); ++m) {
    NodeId old = p.groups[g].chunk_members[m], fresh = group.chunk_members[m];
    std::replace(p.kernel_nodes.begin(), p.kernel_nodes.end(), old, fresh);
    p.chunk_member_of.erase(old);
    p.chunk_member_of[fresh] = {static_cast<int>(g), m};
  }
  p.groups[g] = group;
}

// The summed time of a candidate's member kernels (searched, or from the
// tuning cache), times its chunks; nothing where some kernel was not timed.
std::optional<double> group_ms(search::ScheduleSearch& search, const kernel::SliceGroup& candidate,
                               const kernel::SliceGroup& heuristic, const std::map<NodeId, double>& share,
                               size_t candidates) {
  double ms = 0;
  for (size_t m = 0; m < candidate.chunk_members.size(); ++m) {
    NodeId node = candidate.chunk_members[m];
    auto s = share.find(heuristic.chunk_members[m]);
    double seconds = s == share.end() ? 0.0 : s->second / static_cast<double>(candidates);
    search.choose(node, std::max(seconds, 1e-3));  // at least the heuristic schedule is timed
    const std::vector<search::KernelReport>& reports = search.report().kernels;
    auto rep = std::find_if(reports.rbegin(), reports.rend(), [&](const search::KernelReport& r) { return r.node == node; });
    if (rep == reports.rend() || rep->best_ms <= 0) return std::nullopt;
    ms += rep->best_ms;
  }
  return ms * static_cast<double>(candidate.chunks({}));
}

}  // namespace

void slice_kernels(Pipeline& p, const kernel::SliceOptions& options, const backend::Capabilities& caps,
                   search::SearchOptions& search) {
  kernel::SliceOptions o = options;
  const char* env = std::getenv("LUMEN_SLICE");
  if (env && std::string(env) == "0") o.enabled = false;
  int threads = std::max(caps.threads, 1);
  if (o.chunk_bytes == 0) {
    // A chunk's intermediates pass from kernel to kernel through the caches:
    // twice the threads' L2, within a quarter of the last-level cache.
    int64_t l2 = caps.l2_bytes > 0 ? caps.l2_bytes : int64_t{1} << 20;
    int64_t l3 = caps.l3_bytes > 0 ? caps.l3_bytes : int64_t{16} << 20;
    o.chunk_bytes = std::clamp<int64_t>(2 * l2 * threads, int64_t{1} << 20, std::max<int64_t>(l3 / 4, int64_t{1} << 20));
  }
  o.min_rows = std::max<int64_t>(o.min_rows, 4 * threads);  // a few register-tile rows per thread
  p.groups = kernel::slice_groups(*p.graph, p.materialized, p.kernel_nodes, roots_of(p), p.needed, o);
  p.needed.resize(p.graph->size(), false);
  for (size_t g = 0; g < p.groups.size(); ++g) {
    const kernel::SliceGroup& group = p.groups[g];
    for (size_t m = 0; m < group.members.size(); ++m) {
      auto it = std::find(p.kernel_nodes.begin(), p.kernel_nodes.end(), group.members[m]);
      if (it == p.kernel_nodes.end()) fail("slicing: kernel ", group.members[m], " is not among the kernels (internal error)");
      *it = group.chunk_members[m];
      p.chunk_member_of[group.chunk_members[m]] = {static_cast<int>(g), m};
    }
    for (const kernel::SliceAxis& a : group.axes) {
      if (!a.origin_dim.empty()) search.dims[a.origin_dim] = 0;
    }
    p.slice_report += "slicing: " + group.describe(*p.graph) + "\n";
  }
}

void choose_chunks(Pipeline& p, search::ScheduleSearch& search, std::map<NodeId, double>& share) {
  int64_t fewest = 4 * std::max(p.target.threads, 1);
  for (size_t g = 0; g < p.groups.size(); ++g) {
    const kernel::SliceGroup heuristic = p.groups[g];
    int64_t chunk = heuristic.axes.back().chunk, extent = evaluate(heuristic.axes.back().extent, {});
    std::vector<int64_t> chunks{chunk};
    for (int64_t c : {chunk / 2 / 8 * 8, chunk * 2}) {
      if (c >= fewest && c < extent && std::find(chunks.begin(), chunks.end(), c) == chunks.end()) chunks.push_back(c);
    }
    if (chunks.size() < 2) continue;
    std::ostringstream line;
    line << "slicing: group of " << heuristic.members.size() << " kernels, chunk rows timed:";
    double best = 0;
    for (int64_t c : chunks) {
      std::optional<kernel::SliceGroup> candidate =
          c == chunk ? std::optional<kernel::SliceGroup>(heuristic)
                     : kernel::rechunk(*p.graph, p.materialized, heuristic, c, roots_of(p), p.needed);
      p.needed.resize(p.graph->size(), false);
      if (!candidate) continue;
      std::optional<double> ms = group_ms(search, *candidate, heuristic, share, chunks.size());
      if (!ms) {
        line << " " << c << " (not timed)";
        continue;
      }
      line << " " << c << ": " << *ms << " ms";
      if (best > 0 && *ms >= best) continue;
      best = *ms;
      for (size_t m = 0; m < candidate->chunk_members.size(); ++m) {
        auto s = share.find(heuristic.chunk_members[m]);
        if (s != share.end()) share[candidate->chunk_members[m]] = s->second;
      }
      use_group(p, g, *candidate);
    }
    p.slice_report += line.str() + ", chose " + std::to_string(p.groups[g].axes.back().chunk) + "\n";
  }
}

void rechunk_groups(Pipeline& p, const ChunkChooser& rows) {
  for (size_t g = 0; g < p.groups.size(); ++g) {
    const kernel::SliceGroup current = p.groups[g];
    int64_t chunk = rows(current);
    if (chunk == current.axes.back().chunk) continue;
    std::optional<kernel::SliceGroup> candidate =
        kernel::rechunk(*p.graph, p.materialized, current, chunk, roots_of(p), p.needed);
    p.needed.resize(p.graph->size(), false);
    if (candidate) use_group(p, g, *candidate);
  }
}

void attach_to_group(Pipeline& p, size_t first_launch, NodeId n) {
  auto it = p.chunk_member_of.find(n);
  if (it == p.chunk_member_of.end()) return;
  const auto [g, m] = it->second;
  const kernel::SliceGroup& group = p.groups[static_cast<size_t>(g)];
  backend::CompiledProgram& prog = p.program;
  for (size_t k = first_launch; k < prog.launches.size(); ++k) {
    backend::Launch& l = prog.launches[k];
    l.group = g;
    l.moves.assign(l.buffers.size(), {});
    bool outside = l.computes == backend::kPackLaunch;
    for (size_t b = 0; b < l.buffers.size(); ++b) {
      NodeId& node = l.buffers[b];
      if (node < 0) continue;
      auto out = group.output_of.find(node);
      if (out != group.output_of.end()) {
        node = out->second;
        l.moves[b] = group.output_moves.at(node).offsets;
        prog.kernels[l.kernel].buffers[b].numel = -1;
        outside = false;
        continue;
      }
      auto ext = group.moves[m].find(node);
      if (ext != group.moves[m].end()) {
        l.moves[b] = ext->second.offsets;
        prog.kernels[l.kernel].buffers[b].numel = -1;  // its pointer moves into the buffer: less is left
      } else {
        outside = false;  // a chunk-sized internal buffer
      }
    }
    auto out = group.output_of.find(l.computes);
    if (out != group.output_of.end()) l.computes = out->second;
    // A pack computing from the chunk's origin (an iota it copies) differs per chunk.
    std::string text = outside ? kernel::to_string(prog.kernels[l.kernel]) : "";
    for (const kernel::SliceAxis& a : group.axes) {
      if (!a.origin_dim.empty() && text.find(a.origin_dim) != std::string::npos) outside = false;
    }
    l.same_for_same_pointers = outside;
  }
}

}  // namespace lumen::compiler
