// PointEvaluator — single elements of graph nodes, with the interpreter's
// semantics, without materialising anything. Nodes with a given buffer are
// read from it; the rest are computed recursively (memoised per element).
// Used to verify compiled kernels on sampled output elements when running
// the whole interpreter would be too slow (a 2048³ matmul's product has 8G
// elements; one output element needs 2048 of them).
#pragma once

#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "lumen/backend/interp/edge_reader.h"
#include "lumen/core/array.h"
#include "lumen/core/graph.h"

namespace lumen::interp {

class PointEvaluator {
 public:
  PointEvaluator(const Graph& graph, std::map<NodeId, const Array*> buffers, Bindings bindings);
  // The value of node `n` at `idx` (one index per dim of its shape).
  Scalar value(NodeId n, const std::vector<int64_t>& idx);

 private:
  Scalar edge_value(const Node& consumer, size_t input, const std::vector<int64_t>& idx);
  Scalar compute(NodeId n, const std::vector<int64_t>& idx);
  const std::vector<int64_t>& dims(NodeId n);
  EdgeReader& reader(const Node& consumer, size_t input);

  const Graph& graph_;
  std::map<NodeId, const Array*> buffers_;
  Bindings bindings_;
  std::unordered_map<NodeId, std::vector<int64_t>> dims_;
  std::map<std::pair<const Node*, size_t>, std::unique_ptr<EdgeReader>> readers_;
  std::unordered_map<NodeId, std::unordered_map<int64_t, Scalar>> memo_;
};

}  // namespace lumen::interp
