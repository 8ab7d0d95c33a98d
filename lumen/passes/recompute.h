// Recomputation (rematerialisation): a value a program would keep in memory
// from where it is made until a distant reader is computed a second time for
// its late readers, from values held in memory anyway, so its buffer can be
// freed after its early readers. In a training step the backward pass reads
// forward activations (a GELU's intermediates, softmax probabilities) long
// after the forward pass made them; recomputing a cheap elementwise chain
// there costs a few ALU ops per element and frees the buffer in between.
//
// This pass is the mechanism: which values, and from where, is the
// compiler's choice (lumen/compiler/recompute_stage.h models bytes against
// extra work).
#pragma once

#include <vector>

#include "lumen/core/graph.h"

namespace lumen::passes {

struct RecomputeRequest {
  std::vector<NodeId> values;  // values to compute again for their late readers
  // Per node of the graph: whether the value is held in memory (has a
  // buffer). A copy of a value reads these as they are and recomputes every
  // other node between them and the value. Inputs count as kept.
  std::vector<bool> kept;
  // Late readers: nodes with id >= `from`, and the graph's state updates
  // (written at the end of a run). Every value must come before `from`.
  NodeId from = 0;
};

struct Recomputation {
  Graph graph;
  std::vector<NodeId> copies;  // per request value: its copy in `graph` (-1: no late reader needed it)
  int copied_nodes = 0;        // nodes added to compute the copies
};

// The graph with each requested value's late readers reading a copy of it:
// the copy recomputes the value, and every node between it and the kept
// values it reads, just before the first late reader that needs it (copies
// are shared between readers). Early readers and the graph's outputs read the
// originals. Outputs, state updates, dims and constraints carry over;
// `outputs` (edges of `graph`) are replaced by the matching edges of the
// result. Every output computes what it did.
Recomputation recompute(const Graph& graph, const RecomputeRequest& request, std::vector<Edge>& outputs);

}  // namespace lumen::passes
