#include "lumen/egraph/saturate.h"

#include <chrono>
#include <sstream>

namespace lumen::egraph {

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::Saturated: return "saturated";
    case StopReason::NodeLimit: return "node limit";
    case StopReason::IterationLimit: return "iteration limit";
    case StopReason::TimeLimit: return "time limit";
  }
  return "?";
}

std::string SaturationReport::summary() const {
  std::ostringstream out;
  out << "e-graph: " << stop_reason_name(stop) << " after " << iterations << " iterations, " << nodes << " e-nodes in "
      << classes << " classes, " << seconds * 1e3 << " ms; rules fired:";
  bool any = false;
  for (const auto& [name, count] : fired) {
    if (count == 0) continue;
    out << " " << name << " x" << count;
    any = true;
  }
  if (!any) out << " none";
  return out.str();
}

namespace {

struct PendingMatch {
  size_t rule;
  ClassId root;
  Subst subst;
};

}  // namespace

SaturationReport saturate(EGraph& egraph, const std::vector<Rule>& rules, const Limits& limits) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  SaturationReport report;
  for (const Rule& r : rules) report.fired[r.name] = 0;
  std::vector<int> bans(rules.size(), 0), banned_until(rules.size(), 0);
  egraph.rebuild();
  bool stopped = false;
  auto stop = [&](StopReason why) {
    report.stop = why;
    stopped = true;
  };
  for (;;) {
    if (report.iterations >= limits.max_iterations) {
      stop(StopReason::IterationLimit);
      break;
    }
    if (elapsed() > limits.max_seconds) {
      stop(StopReason::TimeLimit);
      break;
    }
    if (egraph.node_count() >= limits.max_nodes) {
      stop(StopReason::NodeLimit);
      break;
    }
    ++report.iterations;
    // Search every rule on the e-graph as it was, then apply: a fixed snapshot per iteration.
    std::vector<PendingMatch> pending;
    std::vector<ClassId> ids = egraph.class_ids();
    std::vector<ViewId> identity;
    identity.reserve(ids.size());
    for (ClassId c : ids) identity.push_back(egraph.identity_edge(c).view);
    bool any_banned = false;
    for (size_t r = 0; r < rules.size() && !stopped; ++r) {
      if (banned_until[r] > report.iterations) {
        any_banned = true;
        continue;
      }
      size_t limit = limits.match_limit << bans[r];
      std::vector<Subst> found;
      std::vector<ClassId> where;
      for (size_t i = 0; i < ids.size() && found.size() <= limit; ++i) {
        match(egraph, rules[r].lhs, ids[i], identity[i], rules[r].scope, found, limit + 1);
        where.resize(found.size(), ids[i]);
        if ((i & 255) == 0 && elapsed() > limits.max_seconds) {
          stop(StopReason::TimeLimit);
          break;
        }
      }
      if (found.size() > limit) {  // too many: sit out a while, with a larger allowance next time
        banned_until[r] = report.iterations + (limits.ban_length << bans[r]);
        ++bans[r];
        any_banned = true;
        continue;
      }
      for (size_t k = 0; k < found.size(); ++k) pending.push_back({r, where[k], std::move(found[k])});
    }
    size_t changed = 0;
    size_t nodes_before = egraph.node_count();
    for (size_t k = 0; k < pending.size() && !stopped; ++k) {
      if (apply_rule(egraph, rules[pending[k].rule], pending[k].subst, pending[k].root)) {
        ++report.fired[rules[pending[k].rule].name];
        ++changed;
      }
      if (egraph.node_count() >= limits.max_nodes) stop(StopReason::NodeLimit);
      else if ((k & 63) == 0 && elapsed() > limits.max_seconds) stop(StopReason::TimeLimit);
    }
    changed += egraph.rebuild();
    if (stopped) break;
    if (changed == 0 && egraph.node_count() == nodes_before && !any_banned) {
      stop(StopReason::Saturated);
      break;
    }
  }
  report.nodes = egraph.node_count();
  report.classes = egraph.class_count();
  report.seconds = elapsed();
  return report;
}

}  // namespace lumen::egraph
