#include "lumen/dist/dist_program.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "lumen/core/error.h"
#include "lumen/core/stopwatch.h"
#include "lumen/dist/comm_buffers.h"
#include "lumen/dist/graph_hash.h"

namespace lumen::dist {

namespace {

std::atomic<int> programs_made{0};

// LUMEN_DIST_STARTUP_TIMEOUT, else 1800 s: how long ranks wait for each other while building.
double startup_timeout_s() {
  const char* env = std::getenv("LUMEN_DIST_STARTUP_TIMEOUT");
  if (!env || !*env) return 1800.0;
  char* end = nullptr;
  double v = std::strtod(env, &end);
  if (end == env || *end != '\0' || !(v > 0)) fail("LUMEN_DIST_STARTUP_TIMEOUT='", env, "' must be a positive number of seconds");
  return v;
}

std::vector<NamedOutput> named_outputs(const Graph& graph, const std::vector<Tensor>& outputs) {
  if (outputs.empty()) {
    if (graph.outputs().empty()) fail("dist: the graph has no outputs (pass them or mark_output them)");
    return graph.outputs();
  }
  std::vector<NamedOutput> named;
  for (const Tensor& t : outputs) {
    std::string name = "out" + std::to_string(named.size());
    for (const NamedOutput& o : graph.outputs()) {
      if (o.edge == t.edge()) name = o.name;
    }
    named.push_back({name, t.edge()});
  }
  return named;
}

void check_same_plan(Communicator& world, uint64_t hash) {
  std::vector<uint64_t> all = world.all_gather_u64(hash, "the start-up check that every rank builds the same program");
  std::ostringstream differ;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r] != all[0]) differ << (differ.tellp() > 0 ? ", " : "") << r;
  }
  if (differ.tellp() > 0) {
    fail("dist: rank(s) ", differ.str(), " built a different graph or plan than rank 0 (another model, config, "
         "sequence layout or parallel plan); every rank must run the same program");
  }
}

}  // namespace

DistProgram::DistProgram(const Graph& graph, const std::vector<Tensor>& outputs, const ParallelSpec& spec,
                         const DistOptions& options)
    : graph_(graph), spec_(spec) {
  world_ = options.comm ? options.comm : &world();
  if (world_->size() != spec.ranks()) {
    fail("dist: the plan needs ", spec.ranks(), " ranks (", spec.stages, " stages x ", spec.shards, " shards) but ",
         world_->size(), " were started (mpirun -np ", spec.ranks(), ")");
  }
  rank_ = world_->rank();
  tag_base_ = (programs_made++ % 1000) * 100000;
  // Ranks reach this point and finish compiling at different times (caches,
  // load): the start-up exchanges wait longer than the run's communication.
  struct Restore {  // the run's limit again, also when building fails
    Communicator& comm;
    double seconds;
    ~Restore() { comm.timeout_s = seconds; }
  } restore{*world_, world_->timeout_s};
  double run_timeout = world_->timeout_s;
  world_->timeout_s = std::max(run_timeout, startup_timeout_s());
  std::vector<NamedOutput> outs = named_outputs(graph_, outputs);
  sharded_ = propagate(graph_, spec_, outs);
  hash_ = plan_fingerprint(graph_, outs, spec_);
  check_same_plan(*world_, hash_);
  if (spec.stages > 1) group_ = world_->split(rank_ / spec.shards, rank_ % spec.shards);
  local_ = localize(graph_, sharded_, rank_);
  plan_ = cut_segments(local_, options.bucket_bytes);
  compile_segments(options);
  share_states_between_segments();
  flights_.resize(local_.comms.size());
  for (auto& f : flights_) f = std::make_unique<Flight>();
  for (size_t g = 0; g < plan_.groups.size(); ++g) {
    for (int c : plan_.groups[g].comms) flights_[static_cast<size_t>(c)]->group = static_cast<int>(g);
  }
  world_->barrier("the other ranks to finish compiling");
  if (group_) group_->timeout_s = run_timeout;
}

DistProgram::~DistProgram() {
  try {
    for (auto& s : sends_) s->request->wait_for(world_->timeout_s);
  } catch (...) {  // a failed job ends elsewhere; a destructor must not throw
  }
}

void DistProgram::compile_segments(const DistOptions& options) {
  for (const Segment& s : plan_.segments) {
    segments_.push_back(std::make_unique<Program>(compile(s.graph, {}, options.compile)));
  }
  fed_version_.resize(segments_.size());
}

void DistProgram::share_states_between_segments() {
  for (size_t i = 0; i < plan_.segments.size(); ++i) {
    for (const std::string& name : plan_.segments[i].states) {
      auto it = state_owner_.find(name);
      if (it == state_owner_.end()) {
        state_owner_[name] = i;
      } else {
        segments_[i]->share_state(*segments_[it->second], name);
      }
    }
  }
}

bool DistProgram::has_input(const std::string& input) const { return local_.input_sharding.count(input) > 0; }

bool DistProgram::declares_input(const std::string& input) const { return graph_.find_input(input) >= 0; }

void DistProgram::set(const std::string& input, const Array& whole) {
  NodeId id = graph_.find_input(input);
  if (id < 0) fail("dist: set: the program has no input named '", input, "'");
  auto s = local_.input_sharding.find(input);
  if (s == local_.input_sharding.end() || !s->second.is_split()) {
    set_local(input, whole);
    return;
  }
  set_local(input, chunk_of(whole, s->second.axis, spec_.shards, rank_ % spec_.shards, input));
}

void DistProgram::set_local(const std::string& input, Array local) {
  NodeId id = graph_.find_input(input);
  if (id < 0) fail("dist: set: the program has no input named '", input, "'");
  const Node& n = graph_.node(id);
  if (local.dtype() != n.dtype) {
    fail("dist: set: input '", input, "' is ", dtype_name(n.dtype), " but the data is ", dtype_name(local.dtype()));
  }
  if (n.persistent) {
    auto owner = state_owner_.find(input);
    if (owner != state_owner_.end()) segments_[owner->second]->set(input, local);
    return;
  }
  inputs_[input] = std::move(local);
  ++input_version_[input];
}

void DistProgram::bind(const std::string& dim, int64_t value) {
  if (!graph_.has_dim(dim)) fail("dist: bind: the program has no dynamic dim '", dim, "'");
  explicit_dims_[dim] = value;
}

bool DistProgram::has_dim(const std::string& dim) const { return graph_.has_dim(dim); }

Bindings DistProgram::bindings_for_run() const {
  Bindings b;
  for (const auto& [name, value] : explicit_dims_) b[name] = value;
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
  for (const auto& [name, a] : inputs_) {
    std::vector<int64_t> shape = a.shape();
    auto s = local_.input_sharding.find(name);
    if (s != local_.input_sharding.end() && s->second.is_split()) shape[static_cast<size_t>(s->second.axis)] *= spec_.shards;
    shapes.emplace_back(name, shape);
  }
  graph_.bind_dims(shapes, b);
  for (const Expr& c : sharded_.conditions) {
    if (evaluate(c, b) == 0) {
      fail("dist: at these sizes the plan's split does not hold (", to_string(c),
           "); the dims are out of the range the program was planned for");
    }
  }
  return b;
}

void DistProgram::run() {
  reap_sends();
  run_bindings_ = bindings_for_run();
  values_.clear();
  outputs_.clear();
  whole_outputs_.clear();
  for (auto& f : flights_) {
    f->ready = false;
    f->result = Array();
  }
  group_flight_.clear();
  group_flight_.resize(plan_.groups.size());
  post_receives(run_bindings_);
  size_t next_group = 0;
  for (size_t i = 0; i < segments_.size(); ++i) {
    const SegmentKey& key = plan_.segments[i].key;
    while (next_group < plan_.groups.size() && plan_.groups[next_group].after < key) launch(next_group++);
    feed(i, run_bindings_);
    auto start = std::chrono::steady_clock::now();
    segments_[i]->run();
    stats_.compute_seconds += seconds_since(start);
    Program& p = *segments_[i];
    for (const std::string& v : plan_.segments[i].values_out) values_[v] = p.get(v);
    for (const std::string& o : plan_.segments[i].outputs) outputs_[o] = p.get(output_name(o));
    while (next_group < plan_.groups.size() && !(key < plan_.groups[next_group].after)) launch(next_group++);
  }
  while (next_group < plan_.groups.size()) launch(next_group++);
  // Results nobody here reads (collectives other ranks need) still complete before the next run.
  for (size_t c = 0; c < flights_.size(); ++c) {
    if (local_.comms[c].result >= 0) settle(static_cast<int>(c));
  }
  for (size_t g = 0; g < group_flight_.size(); ++g) complete_group(g);
  ++stats_.runs;
}

void DistProgram::feed(size_t segment, const Bindings& b) {
  Program& p = *segments_[segment];
  const Graph& g = p.graph();
  for (NodeId id : g.input_ids()) {
    const Node& n = g.node(id);
    if (n.persistent) continue;
    if (n.name.rfind("dist.comm", 0) == 0) {
      int index = std::stoi(n.name.substr(9));
      for (size_t c = 0; c < local_.comms.size(); ++c) {
        if (local_.comms[c].index != index) continue;
        settle(static_cast<int>(c));
        p.set(n.name, flights_[c]->result);
      }
    } else if (n.name.rfind("dist.v", 0) == 0) {
      p.set(n.name, values_.at(n.name));
    } else {
      auto it = inputs_.find(n.name);
      if (it == inputs_.end()) fail("dist: run: input '", n.name, "' (", to_string(n.shape), ") was not set; set it before running");
      uint64_t& seen = fed_version_[segment][n.name];
      if (seen != input_version_[n.name]) {
        p.set(n.name, it->second);
        seen = input_version_[n.name];
      }
    }
  }
  std::vector<std::string> dims = g.dim_names();
  for (const std::string& d : dims) p.bind(d, b.at(d));
}

const Array& DistProgram::get(const std::string& output) {
  if (stats_.runs == 0) fail("dist: get: output '", output, "' is not available; call run() first");
  size_t k = 0;
  while (k < sharded_.output_edges.size() && sharded_.output_edges[k].name != output) ++k;
  if (k == sharded_.output_edges.size()) fail("dist: get: the program has no output named '", output, "'");
  if (spec_.stages == 1) return outputs_.at(output);
  auto cached = whole_outputs_.find(output);
  if (cached != whole_outputs_.end()) return cached->second;
  int root = sharded_.output_stage[k] * spec_.shards + rank_ % spec_.shards;
  Array a;
  if (rank_ == root) {
    a = outputs_.at(output).clone();
  } else {
    const NamedOutput& o = sharded_.output_edges[k];
    std::vector<int64_t> shape;
    for (const Expr& d : o.edge.view.shape()) shape.push_back(evaluate(d, run_bindings_));
    a = Array(graph_.node(o.edge.node).dtype, shape);
  }
  auto r = world_->broadcast(a.data(), static_cast<int64_t>(a.nbytes()), root);
  auto start = std::chrono::steady_clock::now();
  world_->wait(*r, "output '" + output + "' from pipeline stage " + std::to_string(sharded_.output_stage[k]));
  stats_.wait_seconds += seconds_since(start);
  return whole_outputs_[output] = a;
}

std::vector<std::string> DistProgram::output_names() const {
  std::vector<std::string> names;
  for (const NamedOutput& o : sharded_.output_edges) names.push_back(o.name);
  return names;
}

void DistProgram::reset_state() {
  for (const auto& [name, owner] : state_owner_) segments_[owner]->reset_state();
}

const Array& DistProgram::state(const std::string& name) const {
  auto it = state_owner_.find(name);
  if (it == state_owner_.end()) fail("dist: state: rank ", rank_, " holds no state named '", name, "'");
  return segments_[it->second]->state(name);
}

void DistProgram::share_state(const DistProgram& other) {
  for (size_t i = 0; i < plan_.segments.size(); ++i) {
    for (const std::string& name : plan_.segments[i].states) {
      auto it = other.state_owner_.find(name);
      if (it == other.state_owner_.end()) fail("dist: share_state: the other program has no state named '", name, "'");
      segments_[i]->share_state(*other.segments_[it->second], name);
    }
  }
}

std::string DistProgram::report() const {
  std::ostringstream s;
  s << "rank " << rank_ << " of " << ranks() << ": " << sharded_.summary() << "\n";
  s << "  " << segments_.size() << " segments, " << plan_.groups.size() << " communication groups";
  if (stats_.runs > 0) {
    s << "; " << stats_.runs << " runs: compute " << stats_.compute_seconds << " s, waiting " << stats_.wait_seconds
      << " s, sent " << stats_.bytes_sent << " bytes";
  }
  s << "\n";
  for (const LocalComm& c : local_.comms) {
    s << "  " << comm_kind_name(c.point.kind) << " of " << c.name;
    if (c.point.kind == CommKind::Transfer) s << " (stage " << c.point.from_stage << " -> " << c.point.to_stage << ")";
    s << "\n";
  }
  return s.str();
}

}  // namespace lumen::dist
