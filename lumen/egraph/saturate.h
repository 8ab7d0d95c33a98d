// Bounded equality saturation: apply every rule at every match, rebuild,
// repeat, until nothing changes or a limit is reached. The report says which
// limit stopped it, so callers (and tests) can tell saturation from a cut-off.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "lumen/egraph/rule.h"

namespace lumen::egraph {

struct Limits {
  size_t max_nodes = 20000;        // e-nodes; passed by at most one rule application's nodes
  int max_iterations = 8;
  double max_seconds = 2.0;        // wall time, checked between matches and applications
  // Back-off (as in egg): a rule matching more than match_limit << bans
  // times in one iteration is not applied and sits out ban_length << bans
  // iterations, so associativity and commutativity cannot fill the node
  // budget before the other rules had their turn.
  size_t match_limit = 1000;
  int ban_length = 2;
};

enum class StopReason { Saturated, NodeLimit, IterationLimit, TimeLimit };
const char* stop_reason_name(StopReason reason);

struct SaturationReport {
  StopReason stop = StopReason::Saturated;
  int iterations = 0;
  size_t nodes = 0, classes = 0;
  double seconds = 0;
  std::map<std::string, size_t> fired;  // rule name -> applications that merged two classes
  std::string summary() const;
};

// A rule application may add a handful of e-nodes after the node limit is seen.
inline constexpr size_t kNodeLimitSlack = 32;

SaturationReport saturate(EGraph& egraph, const std::vector<Rule>& rules, const Limits& limits);

}  // namespace lumen::egraph
