// CpuExecutor's sliced groups (lumen/kernel/slicing.h): which kernels run as
// chunk kernels, their buffers' lifetimes, and the loop over chunks.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>

#include <unistd.h>

#include "lumen/backend/cpu/thread_pool.h"
#include "lumen/core/error.h"
#include "lumen/kernel/printer.h"
#include "lumen/runtime/cpu_executor.h"

namespace lumen {

// Replaces the members of every group found among `todo` by their chunk
// copies; origin dims take 0 while schedules are tuned.
std::vector<NodeId> CpuExecutor::slice_kernels(std::vector<NodeId> todo, const kernel::SliceOptions& options,
                                               search::SearchOptions& search) {
  std::vector<Edge> roots = outputs_;
  for (const Write& w : writes_) roots.push_back(graph_->node(w.copy).inputs[0]);
  kernel::SliceOptions o = options;
  int threads = cpu::ThreadPool::global()->size();
  if (o.chunk_bytes == 0) {
    // A chunk's intermediates pass from kernel to kernel through the caches:
    // twice the threads' L2, within a quarter of the L3.
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE), l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    int64_t l2_bytes = l2 > 0 ? l2 : int64_t{1} << 20, l3_bytes = l3 > 0 ? l3 : int64_t{16} << 20;
    o.chunk_bytes = std::clamp<int64_t>(2 * l2_bytes * threads, int64_t{1} << 20, std::max<int64_t>(l3_bytes / 4, int64_t{1} << 20));
  }
  o.min_rows = std::max<int64_t>(o.min_rows, 4 * threads);  // a few register-tile rows per thread
  const char* env = std::getenv("LUMEN_SLICE");  // LUMEN_SLICE=0: no sliced groups (to compare)
  if (env && std::string(env) == "0") o.enabled = false;
  groups_ = kernel::slice_groups(*graph_, materialized_, todo, roots, needed_, o);
  for (const kernel::SliceGroup& g : groups_) slice_report_ += "slicing: " + g.describe(*graph_) + "\n";
  needed_.resize(graph_->size(), false);
  std::vector<std::string> dims = graph_->dim_names();
  for (size_t g = 0; g < groups_.size(); ++g) {
    const kernel::SliceGroup& group = groups_[g];
    for (size_t m = 0; m < group.members.size(); ++m) {
      auto it = std::find(todo.begin(), todo.end(), group.members[m]);
      if (it == todo.end()) fail("slicing: kernel ", group.members[m], " is not among the kernels (internal error)");
      *it = group.chunk_members[m];
      chunk_member_of_[group.chunk_members[m]] = {static_cast<int>(g), m};
    }
    for (const kernel::SliceAxis& a : group.axes) {
      if (!a.origin_dim.empty()) search.dims[a.origin_dim] = 0;
    }
  }
  return todo;
}

// With a search budget, each group's chunk is measured: the heuristic chunk,
// half and twice it. A candidate's member kernels are timed (their schedules
// searched with a share of the budget, or found in the tuning cache with their
// times, so a warm compile chooses the same without timing) and the one with
// the least kernel time per run (times x chunks) wins.
void CpuExecutor::choose_chunks(search::ScheduleSearch& search, std::map<NodeId, double>& share,
                                std::vector<NodeId>& todo) {
  std::vector<Edge> roots = outputs_;
  for (const Write& w : writes_) roots.push_back(graph_->node(w.copy).inputs[0]);
  int64_t fewest = 4 * cpu::ThreadPool::global()->size();
  for (size_t g = 0; g < groups_.size(); ++g) {
    const kernel::SliceGroup heuristic = groups_[g];
    int64_t chunk = heuristic.axes.back().chunk, extent = evaluate(heuristic.axes.back().extent, {});
    std::vector<int64_t> chunks{chunk};
    for (int64_t c : {chunk / 2 / 8 * 8, chunk * 2}) {
      if (c >= fewest && c < extent && std::find(chunks.begin(), chunks.end(), c) == chunks.end()) chunks.push_back(c);
    }
    if (chunks.size() < 2) continue;
    double best = 0;
    std::ostringstream line;
    line << "slicing: group of " << heuristic.members.size() << " kernels, chunk rows timed:";
    for (int64_t c : chunks) {
      std::optional<kernel::SliceGroup> variant =
          c == chunk ? std::optional<kernel::SliceGroup>(heuristic) : kernel::rechunk(*graph_, materialized_, heuristic, c, roots, needed_);
      needed_.resize(graph_->size(), false);
      if (!variant) continue;
      double ms = 0;
      for (size_t m = 0; m < variant->chunk_members.size(); ++m) {
        NodeId node = variant->chunk_members[m];
        auto s = share.find(heuristic.chunk_members[m]);
        double seconds = s == share.end() ? 0.0 : s->second / static_cast<double>(chunks.size());
        search.choose(node, std::max(seconds, 1e-3));  // at least the heuristic schedule is timed
        const std::vector<search::KernelReport>& reports = search.report().kernels;
        auto rep = std::find_if(reports.rbegin(), reports.rend(), [&](const search::KernelReport& r) { return r.node == node; });
        ms = rep == reports.rend() || rep->best_ms <= 0 || ms < 0 ? -1.0 : ms + rep->best_ms;
      }
      if (ms < 0) {
        line << " " << c << " (not timed)";
        continue;
      }
      ms *= static_cast<double>(variant->chunks({}));
      line << " " << c << ": " << ms << " ms";
      if (best > 0 && ms >= best) continue;
      best = ms;
      for (size_t m = 0; m < variant->chunk_members.size(); ++m) {
        NodeId old = groups_[g].chunk_members[m], fresh = variant->chunk_members[m];
        std::replace(todo.begin(), todo.end(), old, fresh);
        chunk_member_of_.erase(old);
        chunk_member_of_[fresh] = {static_cast<int>(g), m};
        auto s = share.find(heuristic.chunk_members[m]);
        if (s != share.end()) share[fresh] = s->second;
      }
      groups_[g] = *variant;
    }
    slice_report_ += line.str() + ", chose " + std::to_string(groups_[g].axes.back().chunk) + "\n";
  }
}

// The kernels from `first_kernel` on (a chunk member's packs, then the member)
// run in its group: a chunk output is written into the original output's
// buffer, and buffers from outside the group move with the chunk.
void CpuExecutor::attach_to_group(size_t first_kernel, NodeId chunk_member,
                                  std::vector<std::vector<NodeId>>& buffer_nodes) {
  auto it = chunk_member_of_.find(chunk_member);
  if (it == chunk_member_of_.end()) return;
  const auto [g, m] = it->second;
  const kernel::SliceGroup& group = groups_[static_cast<size_t>(g)];
  for (size_t k = first_kernel; k < kernels_.size(); ++k) {
    kernel_group_[k] = g;
    std::vector<std::vector<Expr>>& moves = kernel_moves_[k];
    moves.assign(buffer_nodes[k].size(), {});
    for (size_t b = 0; b < buffer_nodes[k].size(); ++b) {
      NodeId& node = buffer_nodes[k][b];
      if (node < 0) continue;
      auto out = group.output_of.find(node);
      if (out != group.output_of.end()) {
        node = out->second;
        moves[b] = group.output_moves.at(node).coefficients;
        continue;
      }
      auto ext = group.moves[m].find(node);
      if (ext != group.moves[m].end()) moves[b] = ext->second.coefficients;
    }
    auto out = group.output_of.find(kernel_nodes_[k]);
    if (out != group.output_of.end()) kernel_nodes_[k] = out->second;
  }
}

// Buffers a group reads from outside or writes out, and the packs inside it,
// are live for the whole loop over chunks; only the chunk-sized internal
// buffers are rewritten by every chunk and may share space with each other.
void CpuExecutor::extend_group_lifetimes() {
  for (size_t g = 0; g < groups_.size(); ++g) {
    int first = -1, last = -1;
    for (size_t k = 0; k < launches_.size(); ++k) {
      if (launches_[k].group != static_cast<int>(g)) continue;
      if (first < 0) first = static_cast<int>(k);
      last = static_cast<int>(k);
    }
    if (first < 0) continue;
    const kernel::SliceGroup& group = groups_[g];
    for (int k = first; k <= last; ++k) {
      for (NodeId key : launches_[static_cast<size_t>(k)].buffers) {
        bool internal = key >= 0 && std::find(group.chunk_members.begin(), group.chunk_members.end(), key) !=
                                        group.chunk_members.end();
        if (internal) continue;
        int64_t index = key >= 0 ? buffer_index_[static_cast<size_t>(key)] : scratch_index_[static_cast<size_t>(-1 - key)];
        if (index < 0) continue;
        BufferLife& life = lives_[static_cast<size_t>(index)];
        life.first = std::min(life.first, first);
        life.last = std::max(life.last, last);
      }
    }
  }
}

// Runs the group whose launches start at `first`, chunk by chunk; returns the
// index of its last launch.
size_t CpuExecutor::run_group(size_t first, const Bindings& bindings, std::vector<int64_t>& dims,
                              const std::vector<void*>& pointer, const std::vector<void*>& scratch,
                              const LaunchOne& launch) {
  int g = launches_[first].group;
  const kernel::SliceGroup& group = groups_[static_cast<size_t>(g)];
  size_t last = first;
  while (last + 1 < launches_.size() && launches_[last + 1].group == g) ++last;
  std::vector<std::string> names = graph_->dim_names();
  std::vector<int64_t> slots(group.axes.size(), -1);
  for (size_t a = 0; a < group.axes.size(); ++a) {
    if (group.axes[a].origin_dim.empty()) continue;
    slots[a] = std::find(names.begin(), names.end(), group.axes[a].origin_dim) - names.begin();
  }
  // Per launch, per buffer: its element size and its moves at these bindings.
  std::vector<std::vector<std::vector<int64_t>>> steps(last - first + 1);
  std::vector<std::vector<int64_t>> elem(last - first + 1);
  for (size_t k = first; k <= last; ++k) {
    const Launch& l = launches_[k];
    for (size_t b = 0; b < l.buffers.size(); ++b) {
      NodeId key = l.buffers[b];
      DType dtype = key >= 0 ? graph_->node(key).dtype : scratch_[static_cast<size_t>(-1 - key)].dtype;
      elem[k - first].push_back(static_cast<int64_t>(dtype_size(dtype)));
      std::vector<int64_t> step;
      for (const Expr& c : l.moves[b]) step.push_back(evaluate(c, bindings));
      steps[k - first].push_back(step);
    }
  }
  // A pack that reads only buffers from outside the group is skipped while
  // its pointers stay where they were for the previous chunk (the keys and
  // values of one attention head, packed once for all its query chunks).
  std::vector<bool> reads_outside(last - first + 1, false), reads_origin(last - first + 1, false);
  for (size_t k = first; k <= last; ++k) {
    if (kernel_nodes_[k] != -1) continue;
    const Launch& l = launches_[k];
    bool outside = true;
    for (size_t b = 1; b < l.buffers.size(); ++b) {
      NodeId key = l.buffers[b];
      bool chunk_member = std::find(group.chunk_members.begin(), group.chunk_members.end(), key) != group.chunk_members.end();
      outside = outside && key >= 0 && !chunk_member && group.output_moves.count(key) == 0;
    }
    reads_outside[k - first] = outside;
    if (!outside) continue;
    std::string text = kernel::to_string(kernels_[l.kernel]);
    for (const kernel::SliceAxis& a : group.axes) {
      if (!a.origin_dim.empty() && text.find(a.origin_dim) != std::string::npos) reads_origin[k - first] = true;
    }
  }
  std::vector<std::vector<void*>> previous(last - first + 1);
  std::vector<void*> args;
  int64_t chunks = group.chunks(bindings);
  for (int64_t c = 0; c < chunks; ++c) {
    std::vector<int64_t> origin = group.origin(c, bindings);
    for (size_t a = 0; a < origin.size(); ++a) {
      if (slots[a] >= 0) dims[static_cast<size_t>(slots[a])] = origin[a];
    }
    for (size_t k = first; k <= last; ++k) {
      const Launch& l = launches_[k];
      args.clear();
      for (size_t b = 0; b < l.buffers.size(); ++b) {
        NodeId key = l.buffers[b];
        auto* base = static_cast<unsigned char*>(key >= 0 ? pointer[static_cast<size_t>(key)]
                                                          : scratch[static_cast<size_t>(-1 - key)]);
        int64_t offset = 0;
        const std::vector<int64_t>& step = steps[k - first][b];
        for (size_t a = 0; a < step.size(); ++a) offset += origin[a] * step[a];
        args.push_back(base + offset * elem[k - first][b]);
      }
      // A pack that computes from the chunk's origin (an iota it copies) also needs the same origin.
      std::vector<void*> seen = args;
      if (reads_origin[k - first]) {
        for (int64_t o : origin) seen.push_back(reinterpret_cast<void*>(static_cast<intptr_t>(o)));
      }
      if (reads_outside[k - first] && seen == previous[k - first]) continue;
      previous[k - first] = seen;
      launch(k, args);
    }
  }
  for (size_t a = 0; a < slots.size(); ++a) {
    if (slots[a] >= 0) dims[static_cast<size_t>(slots[a])] = 0;
  }
  return last;
}

}  // namespace lumen
