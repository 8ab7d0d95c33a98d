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

using Clock = std::chrono::steady_clock;

struct PendingMatch {
  size_t rule;
  ClassId root;
  Subst subst;
};

// One saturation run: the rules, their back-off state, the clock.
class Saturation {
 public:
  Saturation(EGraph& egraph, const std::vector<Rule>& rules, const Limits& limits)
      : egraph_(egraph), rules_(rules), limits_(limits), bans_(rules.size(), 0), banned_until_(rules.size(), 0) {
    for (const Rule& r : rules) report_.fired[r.name] = 0;
  }

  SaturationReport run() {
    egraph_.rebuild();
    while (!stopped_) {
      if (report_.iterations >= limits_.max_iterations) stop(StopReason::IterationLimit);
      else if (elapsed() > limits_.max_seconds) stop(StopReason::TimeLimit);
      else if (egraph_.node_count() >= limits_.max_nodes) stop(StopReason::NodeLimit);
      else iterate();
    }
    report_.nodes = egraph_.node_count();
    report_.classes = egraph_.class_count();
    report_.seconds = elapsed();
    return std::move(report_);
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  void stop(StopReason why) {
    report_.stop = why;
    stopped_ = true;
  }

  // Searches every rule on the e-graph as it is (a fixed snapshot), then applies the matches.
  void iterate() {
    ++report_.iterations;
    bool any_banned = false;
    std::vector<PendingMatch> pending = search(any_banned);
    size_t changed = 0;
    size_t nodes_before = egraph_.node_count();
    for (size_t k = 0; k < pending.size() && !stopped_; ++k) {
      if (apply_rule(egraph_, rules_[pending[k].rule], pending[k].subst, pending[k].root)) {
        ++report_.fired[rules_[pending[k].rule].name];
        ++changed;
      }
      if (egraph_.node_count() >= limits_.max_nodes) stop(StopReason::NodeLimit);
      else if ((k & 63) == 0 && elapsed() > limits_.max_seconds) stop(StopReason::TimeLimit);
    }
    changed += egraph_.rebuild();
    if (!stopped_ && changed == 0 && egraph_.node_count() == nodes_before && !any_banned) stop(StopReason::Saturated);
  }

  std::vector<PendingMatch> search(bool& any_banned) {
    std::vector<PendingMatch> pending;
    std::vector<ClassId> ids = egraph_.class_ids();
    std::vector<ViewId> identity;
    identity.reserve(ids.size());
    for (ClassId c : ids) identity.push_back(egraph_.identity_edge(c).view);
    for (size_t r = 0; r < rules_.size() && !stopped_; ++r) {
      if (banned_until_[r] > report_.iterations) {
        any_banned = true;
        continue;
      }
      size_t limit = limits_.match_limit << bans_[r];
      std::vector<Subst> found;
      std::vector<ClassId> where;
      for (size_t i = 0; i < ids.size() && found.size() <= limit; ++i) {
        match(egraph_, rules_[r].lhs, ids[i], identity[i], rules_[r].scope, found, limit + 1);
        where.resize(found.size(), ids[i]);
        if ((i & 255) == 0 && elapsed() > limits_.max_seconds) {
          stop(StopReason::TimeLimit);
          break;
        }
      }
      if (found.size() > limit) {  // too many: sit out a while, with a larger allowance next time
        banned_until_[r] = report_.iterations + (limits_.ban_length << bans_[r]);
        ++bans_[r];
        any_banned = true;
        continue;
      }
      for (size_t k = 0; k < found.size(); ++k) pending.push_back({r, where[k], std::move(found[k])});
    }
    return pending;
  }

  EGraph& egraph_;
  const std::vector<Rule>& rules_;
  const Limits& limits_;
  std::vector<int> bans_, banned_until_;
  SaturationReport report_;
  Clock::time_point start_ = Clock::now();
  bool stopped_ = false;
};

}  // namespace

SaturationReport saturate(EGraph& egraph, const std::vector<Rule>& rules, const Limits& limits) {
  return Saturation(egraph, rules, limits).run();
}

}  // namespace lumen::egraph
