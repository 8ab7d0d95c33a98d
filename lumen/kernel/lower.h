// Lowering: one materialised graph node -> a Kernel in the loop IR.
//
// The kernel loops over the node's output (arranged by a Schedule) and
// evaluates the node at each point. Nodes that are not materialised are
// inlined: evaluated at coordinates computed through the edges' views. A
// reduction is emitted as an accumulator loop at the outermost loop level
// that defines every variable its coordinates use, so a per-row reduction
// feeding a per-element consumer runs once per row (softmax becomes one
// kernel per row). Padded positions guard the loads beneath them.
#pragma once

#include <string>
#include <vector>

#include "lumen/core/graph.h"
#include "lumen/kernel/ir.h"
#include "lumen/kernel/kernel_roots.h"
#include "lumen/kernel/schedule.h"

namespace lumen::kernel {

// A buffer a kernel uses: a graph node's buffer, or a scratch buffer the
// kernel's pre-kernels fill (node < 0: scratch number -1 - node).
struct ScratchBuffer {
  Expr elements;  // element count (may use dynamic dims)
  DType dtype;
  const char* role = "packed";  // what it holds: "packed" panels or rfactor's "partials"
};

struct LoweredKernel {
  Kernel kernel;
  std::vector<NodeId> buffer_nodes;  // kernel buffer i holds graph node buffer_nodes[i] (or scratch, if < 0)
  // Kernels to run first (operand packing) and the scratch buffers they fill.
  std::vector<Kernel> pre_kernels;
  std::vector<std::vector<NodeId>> pre_buffer_nodes;
  std::vector<ScratchBuffer> scratch;
  // How many times each graph node is evaluated per run (dynamic dims taken
  // as `assumed_dim`); fusion compares it with the node's size.
  std::vector<double> evaluations;
};

struct LowerOptions {
  double assumed_dim = 64;  // stands in for dynamic dims when counting evaluations
  // Store the result into node `store_node`'s buffer through `store_view`
  // (an injective view from that buffer to the target's shape) instead of
  // into the target's own buffer: how state updates are written.
  NodeId store_node = -1;
  View store_view;
  // Split loops where a condition on their variable changes (split_loops.h):
  // for kernels that run; probes that read the plain loop nest leave it off.
  bool split_loops = false;
};

LoweredKernel lower(const Graph& graph, NodeId target, const std::vector<bool>& materialized,
                    const Schedule& schedule, const std::string& name, const LowerOptions& options = {});

// The flat position of `coords` in a contiguous buffer of `shape`.
Expr flat_index(const Shape& shape, const std::vector<Expr>& coords);

}  // namespace lumen::kernel
