#include "lumen/compiler/recompute_stage.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "lumen/compiler/buffer_lives.h"
#include "lumen/compiler/fusion_stage.h"
#include "lumen/compiler/program_boundary.h"
#include "lumen/core/debug_flags.h"
#include "lumen/passes/recompute.h"

namespace lumen::compiler {

namespace {

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

std::string describe(const Graph& graph, NodeId n) {
  return std::string(op_name(graph.node(n).op)) + "_" + std::to_string(n) + " " + to_string(graph.node(n).shape);
}

void prepare(Pipeline& p) {
  set_program_boundary(p);
  partition_kernels(p);
}

// What the boundary and fusion of `from` decided, taken over by `p`.
void adopt(Pipeline& p, Pipeline& from) {
  p.graph = std::move(from.graph);
  p.outputs = std::move(from.outputs);
  p.writes = std::move(from.writes);
  p.needed = std::move(from.needed);
  p.materialized = std::move(from.materialized);
  p.ops_per_element = std::move(from.ops_per_element);
  p.kernel_nodes = std::move(from.kernel_nodes);
  p.report.fusion_rounds = from.report.fusion_rounds;
}

int peak_place(const std::vector<int64_t>& live) {
  return static_cast<int>(std::max_element(live.begin(), live.end()) - live.begin());
}

int64_t peak_bytes(const BufferLives& lives) {
  std::vector<int64_t> live = live_bytes(lives, lives.first, lives.last);
  return live.empty() ? 0 : *std::max_element(live.begin(), live.end());
}

// A round's choice: the values to recompute for the readers after the peak.
struct Proposal {
  int at = -1;                 // the peak's place
  int64_t peak = 0;            // bytes alive there
  std::vector<NodeId> values;  // to recompute for readers after `at`
  int64_t modelled_peak = 0;   // the largest live set with them recomputed (copies inlined)
  int64_t bytes = 0;           // their buffers' bytes
  double extra_ops = 0;
  std::vector<double> ops;  // per value: ALU ops per element
};

class Chooser {
 public:
  Chooser(const Pipeline& p, const BufferLives& lives, size_t staged_size, const RecomputeOptions& options)
      : p_(p), lives_(lives), staged_size_(staged_size), options_(options) {}

  Proposal propose() {
    Proposal r;
    std::vector<int64_t> live = live_bytes(lives_, lives_.first, lives_.last);
    if (live.empty()) return r;
    r.at = peak_place(live);
    r.peak = live[static_cast<size_t>(r.at)];
    find_candidates(r.at);
    drop_unanchored(r.at);
    std::vector<int> first = lives_.first, last = lives_.last;
    for (size_t v = 0; v < chosen_.size(); ++v) {
      if (!chosen_[v]) continue;
      const std::vector<int>& readers = lives_.readers[v];
      auto early_end = std::lower_bound(readers.begin(), readers.end(), r.at);
      if (early_end == readers.begin()) {
        first[v] = last[v] = -1;  // no early reader: only the copy is computed
      } else {
        last[v] = std::max(lives_.place[v], *(early_end - 1));
      }
      for (NodeId a : anchors_of(static_cast<NodeId>(v))) {  // the copies read these until the last late reader
        auto i = static_cast<size_t>(a);
        if (lives_.bytes[i] > 0) last[i] = std::max(last[i], readers.back());
      }
      double elements =
          static_cast<double>(lives_.bytes[v]) / static_cast<double>(dtype_size(p_.graph->nodes()[v].dtype));
      r.values.push_back(static_cast<NodeId>(v));
      r.ops.push_back(p_.ops_per_element[v]);
      r.bytes += lives_.bytes[v];
      r.extra_ops += p_.ops_per_element[v] * elements;
    }
    std::vector<int64_t> after = live_bytes(lives_, first, last);
    r.modelled_peak = after.empty() ? 0 : *std::max_element(after.begin(), after.end());
    return r;
  }

 private:
  // Buffers alive at `at` and unread there (made before it, read after it),
  // cheap enough in auto mode.
  void find_candidates(int at) {
    const Graph& graph = *p_.graph;
    chosen_.assign(graph.size(), false);
    for (size_t v = 0; v < staged_size_; ++v) {
      if (lives_.bytes[v] == 0 || lives_.first[v] >= at || lives_.last[v] <= at) continue;
      const std::vector<int>& readers = lives_.readers[v];
      if (std::binary_search(readers.begin(), readers.end(), at)) continue;
      bool cheap = p_.ops_per_element[v] <= options_.max_ops_per_element;
      if (debug_enabled("recompute")) {
        std::fprintf(stderr, "recompute: at %d, %s (%.2f MiB, %.0f ops/element)%s\n", at,
                     describe(graph, static_cast<NodeId>(v)).c_str(), mib(lives_.bytes[v]), p_.ops_per_element[v],
                     cheap ? "" : " costs too much");
      }
      chosen_[v] = cheap || options_.mode == RecomputeOptions::Mode::All;
    }
  }

  // The kept values a copy of `v` reads, through the other chosen values (computed again too).
  std::vector<NodeId> anchors_of(NodeId v) const {
    std::vector<NodeId> found, stack = {v};
    std::set<NodeId> seen = {v};
    while (!stack.empty()) {
      NodeId n = stack.back();
      stack.pop_back();
      for (const Edge& e : p_.graph->node(n).inputs) {
        if (!seen.insert(e.node).second) continue;
        auto in = static_cast<size_t>(e.node);
        if (p_.materialized[in] && !chosen_[in]) {
          found.push_back(e.node);
        } else {
          stack.push_back(e.node);
        }
      }
    }
    return found;
  }

  // Drops values whose copies would read a buffer not alive at `at`
  // (recomputing them would carry that buffer across the peak instead),
  // until every chosen value's copy reads only buffers alive there.
  void drop_unanchored(int at) {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t v = 0; v < chosen_.size(); ++v) {
        if (!chosen_[v]) continue;
        for (NodeId a : anchors_of(static_cast<NodeId>(v))) {
          auto i = static_cast<size_t>(a);
          bool alive = p_.graph->node(a).op == Op::Input || lives_.bytes[i] == 0 ||
                       (lives_.first[i] <= at && at <= lives_.last[i]);
          if (alive) continue;
          if (debug_enabled("recompute")) {
            std::fprintf(stderr, "recompute: %s reads %s, not alive at %d\n",
                         describe(*p_.graph, static_cast<NodeId>(v)).c_str(), describe(*p_.graph, a).c_str(), at);
          }
          chosen_[v] = false;
          changed = true;
          break;
        }
      }
    }
  }

  const Pipeline& p_;
  const BufferLives& lives_;
  size_t staged_size_;
  const RecomputeOptions& options_;
  std::vector<bool> chosen_;
};

std::string round_line(int round, const Graph& graph, const BufferLives& lives, const Proposal& r, int64_t found) {
  std::ostringstream out;
  char head[512];
  std::snprintf(head, sizeof head,
                "  round %d: peak %.2f MiB at %s; %zu value%s computed again after it (%.2f MiB, +%.1f M ops); fused "
                "again, the peak is %.2f MiB (%.2f foreseen)\n",
                round, mib(r.peak), describe(graph, lives.order[static_cast<size_t>(r.at)]).c_str(), r.values.size(),
                r.values.size() == 1 ? "" : "s", mib(r.bytes), r.extra_ops / 1e6, mib(found), mib(r.modelled_peak));
  out << head;
  for (size_t i = 0; i < r.values.size(); ++i) {
    if (i == 6) {
      out << "    ... " << r.values.size() - i << " more\n";
      break;
    }
    std::snprintf(head, sizeof head, "    %s, %.0f ops/element\n", describe(graph, r.values[i]).c_str(), r.ops[i]);
    out << head;
  }
  return out.str();
}

}  // namespace

const char* recompute_mode_name(RecomputeOptions::Mode mode) {
  switch (mode) {
    case RecomputeOptions::Mode::Auto:
      return "auto";
    case RecomputeOptions::Mode::None:
      return "none";
    case RecomputeOptions::Mode::All:
      return "all";
  }
  return "?";
}

void partition_with_recompute(Pipeline& p, const RecomputeOptions& options, const Bindings& dims) {
  p.recompute = RecomputeChoice{};
  RecomputeChoice& choice = p.recompute;
  bool none = options.mode == RecomputeOptions::Mode::None;
  Graph staged = none ? Graph() : *p.graph;  // before the boundary's copies: what the rewrite takes
  std::vector<Edge> staged_outputs = p.outputs;
  prepare(p);
  BufferLives lives = buffer_lives(p, dims);
  choice.peak_bytes_before = choice.peak_bytes = peak_bytes(lives);
  if (none) return;
  bool all = options.mode == RecomputeOptions::Mode::All;
  std::string rounds, stop;
  for (int round = 1; round <= options.max_rounds; ++round) {
    Proposal r = Chooser(p, lives, staged.size(), options).propose();
    if (r.values.empty()) break;
    if (!all && r.modelled_peak >= r.peak) {
      stop = "  then stopped: recomputing the " + std::to_string(r.values.size()) +
             " cheap values alive at the peak (" + describe(*p.graph, lives.order[static_cast<size_t>(r.at)]) +
             ") would not lower it\n";
      break;
    }
    passes::RecomputeRequest request;
    request.values = r.values;
    request.kept.assign(p.materialized.begin(), p.materialized.begin() + static_cast<std::ptrdiff_t>(staged.size()));
    request.from = std::min<NodeId>(lives.order[static_cast<size_t>(r.at)] + 1, static_cast<NodeId>(staged.size()));
    std::vector<Edge> outputs = staged_outputs;
    passes::Recomputation rewritten = passes::recompute(staged, request, outputs);
    Pipeline trial;
    trial.graph = std::make_shared<Graph>(rewritten.graph);
    trial.outputs = outputs;
    prepare(trial);
    BufferLives trial_lives = buffer_lives(trial, dims);
    int64_t found = peak_bytes(trial_lives);
    std::string line = round_line(round, *p.graph, lives, r, found);
    if (!all && found >= choice.peak_bytes) {
      stop = "  then stopped: fused again, the graph recomputing these would peak at " + std::to_string(found >> 10) +
             " KiB, not below " + std::to_string(choice.peak_bytes >> 10) + " KiB:\n" + line;
      break;
    }
    rounds += line;
    adopt(p, trial);
    staged = std::move(rewritten.graph);
    staged_outputs = std::move(outputs);
    lives = std::move(trial_lives);
    choice.peak_bytes = found;
    choice.values += static_cast<int>(r.values.size());
    choice.extra_ops += r.extra_ops;
    ++choice.rounds;
  }
  if (rounds.empty() && stop.empty()) return;
  char head[256];
  std::snprintf(head, sizeof head,
                "recompute (%s): %d values computed again for later readers in %d rounds (+%.1f M ALU ops a run); "
                "largest live set %.2f -> %.2f MiB (foreseen from the fusion partition)\n",
                recompute_mode_name(options.mode), choice.values, choice.rounds, choice.extra_ops / 1e6,
                mib(choice.peak_bytes_before), mib(choice.peak_bytes));
  choice.report = head + rounds + stop;
}

}  // namespace lumen::compiler
