// The arena as the runtime will plan it (lumen/runtime/compiled_executor.cpp),
// foreseen from the fusion partition before anything is lowered: kernels run
// in p.kernel_nodes' order, then the state writes; each materialised node's
// buffer lives from its kernel to the last kernel that reads it. Packs,
// scratch buffers and sliced groups are left out (they come later and are
// small beside the activations). The recompute stage weighs its choices on it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lumen/compiler/pipeline.h"

namespace lumen::compiler {

struct BufferLives {
  std::vector<NodeId> order;              // kernels in run order: p.kernel_nodes, then the state writes' copies
  std::vector<int> place;                 // per node: its kernel's index in `order` (-1: none)
  std::vector<std::vector<int>> readers;  // per node: places of the kernels reading its buffer, ascending
  std::vector<int64_t> bytes;             // per node: its buffer's bytes in the arena (0: not there)
  std::vector<int> first, last;           // per node in the arena: the places its buffer lives between
};

// Values derived from parameters alone are kept between runs, outside the arena (lower_stage's
// keep_parameter_relayouts): a kernel that reads only parameters (not program state, of static
// shapes) and values already kept, and makes at most kKeptGrowth times the bytes it reads in no
// wider a dtype than it reads: a relayout or a transform of weights (the int8 dot products'
// interleaved rows, Winograd's transformed filters), not a dequantization, whose wider copy would
// cost more to read each run than decoding in the kernel does. It runs again only when one of
// its parameters is set again.
struct ParameterReads {
  std::vector<std::string> names;  // the parameters it derives from
  int64_t bytes = 0;               // the bytes it reads
  size_t widest = 0;               // the widest dtype it reads, in bytes
};
using KeptValues = std::map<NodeId, ParameterReads>;  // a kept value -> what it was derived from
inline constexpr int64_t kKeptGrowth = 4;

// What a kernel reading `reads` derives from, when it reads only parameters and `kept` values.
std::optional<ParameterReads> parameters_only(const Graph& graph, const std::vector<NodeId>& reads,
                                              const KeptValues& kept);
// The elements of a static shape; -1 when a dim is dynamic.
int64_t static_numel(const Shape& shape);
// Whether a value of `elements` x `dtype` derived from `read` is kept (the bounds above).
bool worth_keeping(const ParameterReads& read, int64_t elements, DType dtype);
// `made` as a kept value derived from `read` (what later readers of it derive from), when it is
// worth keeping; nothing otherwise.
std::optional<ParameterReads> kept_value(const ParameterReads& read, const Node& made);

// Lifetimes of p's buffers with dynamic dims bound by `dims`.
BufferLives buffer_lives(const Pipeline& p, const Bindings& dims);

// Bytes alive at each place, for lifetimes `first`..`last` (-1: none).
std::vector<int64_t> live_bytes(const BufferLives& lives, const std::vector<int>& first, const std::vector<int>& last);

}  // namespace lumen::compiler
