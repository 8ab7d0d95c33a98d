// Extraction — turning an e-graph back into Graphs. A cost model gives every
// e-node a local cost (estimated ALU work, bytes of materialised values, a
// fixed charge per materialised reduction); the cheapest e-node per class is
// found by a fixpoint over tree costs, then improved by hill climbing on the
// cost of the whole DAG (tree costs count a shared value once per use); distinct candidates come from the best
// choice with one class switched to another e-node, ranked by the cost of
// the whole extracted DAG. The original graph itself is always a candidate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lumen/egraph/egraph.h"

namespace lumen::egraph {

// Local cost of one e-node (its operands not included).
double enode_cost(const EGraph& egraph, const ENode& node);

// For each class id, the index of the chosen e-node in that class (-1: none).
using Choice = std::vector<int>;

struct Candidate {
  Graph graph;
  std::vector<Edge> outputs;  // what to compile: the roots' outputs in `graph`
  double cost = 0;       // the extracted DAG's cost
  uint64_t hash = 0;     // graph_hash(graph, outputs)
  bool original = false; // the input graph itself
  std::string label;     // how it differs from the best choice
};

class Extractor {
 public:
  // `original` is the graph add_graph() was given; its inputs, dims,
  // constraints, output names and state updates are carried over.
  Extractor(const EGraph& egraph, const GraphRoots& roots, const Graph& original);

  const Choice& best() const { return best_; }
  Choice original_choice() const;
  // Raises lumen::Error if the choice is cyclic or leaves a needed class unchosen.
  Graph build(const Choice& choice) const;
  double dag_cost(const Choice& choice) const;
  // Up to `count` distinct candidates, cheapest first; the original graph
  // itself is always among them (appended when not in the top). Distinct by
  // graph_hash_unordered unless `operand_order_matters` (then graph_hash).
  std::vector<Candidate> candidates(size_t count, bool operand_order_matters = false) const;

 private:
  void compute_best();
  // Switches single classes while that lowers dag_cost (at most `seconds`).
  void improve(Choice& choice, double seconds) const;
  bool acyclic(const Choice& choice) const;
  std::vector<ClassId> reachable(const Choice& choice) const;

  const EGraph& egraph_;
  const GraphRoots& roots_;
  const Graph& original_;
  std::vector<double> best_cost_;
  Choice best_;
};

// The e-graph of `graph` extracted with its original choice: a Graph that
// evaluates the same (a round trip).
Graph round_trip(const Graph& graph);

}  // namespace lumen::egraph
