// CompiledExecutor's sliced groups (lumen/kernel/slicing.h): the lifetimes of
// the buffers a group touches and the loop over its chunks.
#include <algorithm>
#include <string>

#include "lumen/core/expr_eval.h"

#include "lumen/runtime/compiled_executor.h"

namespace lumen {

// Buffers a group reads from outside or writes out, and the packs inside it,
// are live for the whole loop over chunks; only the chunk-sized internal
// buffers are rewritten by every chunk and may share space with each other.
void CompiledExecutor::extend_group_lifetimes() {
  const std::vector<backend::Launch>& launches = program_.launches;
  for (size_t g = 0; g < program_.groups.size(); ++g) {
    int first = -1, last = -1;
    for (size_t k = 0; k < launches.size(); ++k) {
      if (launches[k].group != static_cast<int>(g)) continue;
      if (first < 0) first = static_cast<int>(k);
      last = static_cast<int>(k);
    }
    if (first < 0) continue;
    const std::vector<NodeId>& internal = program_.groups[g].chunk_members;
    for (int k = first; k <= last; ++k) {
      for (NodeId key : launches[static_cast<size_t>(k)].buffers) {
        if (key >= 0 && std::find(internal.begin(), internal.end(), key) != internal.end()) continue;
        int64_t index = key >= 0 ? buffer_index_[static_cast<size_t>(key)] : scratch_index_[static_cast<size_t>(-1 - key)];
        if (index < 0) continue;
        BufferLife& life = lives_[static_cast<size_t>(index)];
        life.first = std::min(life.first, first);
        life.last = std::max(life.last, last);
      }
    }
  }
}

size_t CompiledExecutor::run_group(size_t first, const Bindings& bindings, std::vector<int64_t>& dims,
                                   const std::vector<void*>& pointer, const std::vector<void*>& scratch,
                                   const LaunchOne& launch) {
  const std::vector<backend::Launch>& launches = program_.launches;
  int g = launches[first].group;
  const kernel::SliceGroup& group = program_.groups[static_cast<size_t>(g)];
  size_t last = first;
  while (last + 1 < launches.size() && launches[last + 1].group == g) ++last;
  std::vector<std::string> names = graph().dim_names();
  std::vector<int64_t> slots(group.axes.size(), -1);
  for (size_t a = 0; a < group.axes.size(); ++a) {
    if (group.axes[a].origin_dim.empty()) continue;
    slots[a] = std::find(names.begin(), names.end(), group.axes[a].origin_dim) - names.begin();
  }
  // Per launch, per buffer: its element size and its offsets (Exprs of the
  // chunk origins) with the dims bound.
  size_t count = last - first + 1;
  std::vector<std::vector<std::vector<Expr>>> offsets(count);
  std::vector<std::vector<int64_t>> element(count);
  for (size_t k = first; k <= last; ++k) {
    const backend::Launch& l = launches[k];
    for (size_t b = 0; b < l.buffers.size(); ++b) {
      NodeId key = l.buffers[b];
      DType dtype = key >= 0 ? graph().node(key).dtype : program_.scratch[static_cast<size_t>(-1 - key)].dtype;
      element[k - first].push_back(static_cast<int64_t>(dtype_size(dtype)));
      std::vector<Expr> bound;
      for (const Expr& o : l.moves[b]) bound.push_back(substitute(o, bindings));
      offsets[k - first].push_back(bound);
    }
  }
  Bindings at;
  for (size_t a = 0; a < group.axes.size(); ++a) at[kernel::chunk_origin_name(a)] = 0;
  // A pack of outside buffers runs again only when its pointers moved (the
  // keys and values of one attention head are packed once for all its query chunks).
  std::vector<std::vector<void*>> previous(count);
  std::vector<void*> args;
  int64_t chunks = group.chunks(bindings);
  for (int64_t c = 0; c < chunks; ++c) {
    std::vector<int64_t> origin = group.origin(c, bindings);
    for (size_t a = 0; a < origin.size(); ++a) {
      if (slots[a] >= 0) dims[static_cast<size_t>(slots[a])] = origin[a];
      at[kernel::chunk_origin_name(a)] = origin[a];
    }
    for (size_t k = first; k <= last; ++k) {
      const backend::Launch& l = launches[k];
      args.clear();
      for (size_t b = 0; b < l.buffers.size(); ++b) {
        NodeId key = l.buffers[b];
        auto* base = static_cast<unsigned char*>(key >= 0 ? pointer[static_cast<size_t>(key)]
                                                          : scratch[static_cast<size_t>(-1 - key)]);
        int64_t offset = 0;
        for (const Expr& o : offsets[k - first][b]) offset += o.is_const() ? o.value() : evaluate(o, at);
        args.push_back(base + offset * element[k - first][b]);
      }
      if (l.same_for_same_pointers && args == previous[k - first]) continue;
      previous[k - first] = args;
      launch(k, args);
    }
  }
  for (int64_t slot : slots) {
    if (slot >= 0) dims[static_cast<size_t>(slot)] = 0;
  }
  return last;
}

}  // namespace lumen
