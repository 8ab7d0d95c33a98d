#include "lumen/runtime/cpu_executor.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "lumen/backend/cpu/codegen.h"
#include "lumen/backend/cpu/isa.h"
#include "lumen/backend/cpu/launch.h"
#include "lumen/backend/cpu/thread_pool.h"
#include "lumen/core/error.h"
#include "lumen/core/host_memory.h"
#include "lumen/core/int_math.h"
#include "lumen/kernel/fusion.h"
#include "lumen/kernel/heuristic.h"
#include "lumen/kernel/lower.h"
#include "lumen/kernel/printer.h"
#include "lumen/kernel/schedule_space.h"

namespace lumen {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A Contiguous node copying what `e` sees into a fresh buffer; the edge reading it.
Edge copy_of(Graph& graph, const Edge& e) {
  Node copy;
  copy.op = Op::Contiguous;
  copy.dtype = graph.node(e.node).dtype;
  copy.shape = e.view.shape();
  copy.inputs = {e};
  NodeId id = graph.add(std::move(copy));
  return Edge{id, View::contiguous(graph.node(id).shape)};
}

bool debug_kernels() {
  const char* d = std::getenv("LUMEN_DEBUG");
  return d && std::strstr(d, "kernels");
}

int64_t bytes_of(const Shape& shape, DType dtype, const Bindings& b) {
  std::vector<int64_t> dims;
  for (const Expr& d : shape) dims.push_back(evaluate(d, b));
  return checked_byte_size(dims, dtype, "run: a buffer");
}

}  // namespace

CpuExecutor::CpuExecutor(std::shared_ptr<const Graph> graph, std::vector<Edge> outputs, CpuOptions options)
    : graph_(std::make_shared<Graph>(*graph)), outputs_(std::move(outputs)) {
  const char* p = std::getenv("LUMEN_PROFILE");
  profile_ = p && *p && std::string(p) != "0";
  prepare_updates();
  prepare_outputs();
  build(options);
}

CpuExecutor::CpuExecutor(std::shared_ptr<const Graph> graph, std::vector<Edge> outputs, ScheduleChooser choose)
    : CpuExecutor(std::move(graph), std::move(outputs), CpuOptions{{}, std::move(choose)}) {}

// Outputs are fresh contiguous arrays: an output read through a view, or an
// input passed straight through, gets a copy node.
void CpuExecutor::prepare_outputs() {
  std::vector<NodeId> seen;
  for (Edge& e : outputs_) {
    const Node& n = graph_->node(e.node);
    bool repeated = std::find(seen.begin(), seen.end(), e.node) != seen.end();
    seen.push_back(e.node);
    // A contiguous view can still be a prefix slice: the output must be the whole buffer.
    bool whole = shape_numel(e.view.shape()) == shape_numel(n.shape);
    if (e.view.is_contiguous() && whole && n.op != Op::Input && !repeated) continue;
    e = copy_of(*graph_, e);
  }
  needed_.assign(graph_->size(), false);
  for (const Edge& e : outputs_) needed_[static_cast<size_t>(e.node)] = true;
  for (const Write& w : writes_) needed_[static_cast<size_t>(w.copy)] = true;
  for (size_t i = graph_->size(); i-- > 0;) {
    if (!needed_[i]) continue;
    for (const Edge& e : graph_->nodes()[i].inputs) needed_[static_cast<size_t>(e.node)] = true;
  }
}

// Each update's value gets its own buffer (so the write kernel only copies,
// and never reads the state it writes); a Contiguous node stands for the copy.
void CpuExecutor::prepare_updates() {
  for (const StateUpdate& u : graph_->updates()) {
    Edge value = u.value;
    const Node& v = graph_->node(value.node);
    if (v.op == Op::Input && v.persistent) {  // a state copied into state: read it into a buffer first
      value = copy_of(*graph_, value);
    }
    writes_.push_back({copy_of(*graph_, value).node, u.state, u.view});
  }
}

void CpuExecutor::build(const CpuOptions& options) {
  auto start = std::chrono::steady_clock::now();
  std::vector<Edge> roots = outputs_;
  for (const Write& w : writes_) roots.push_back(graph_->node(w.copy).inputs[0]);
  kernel::Partition p = kernel::partition(*graph_, roots);
  report_.fusion_rounds = p.rounds;
  report_.fusion_seconds = seconds_since(start);
  materialized_ = p.materialized;

  start = std::chrono::steady_clock::now();
  const cpu::Isa& isa = cpu::host_isa();
  kernel::Target target{isa.f32_lanes(), cpu::ThreadPool::global()->size()};
  std::vector<std::vector<NodeId>> buffer_nodes;
  auto add = [&](kernel::Kernel k, std::vector<NodeId> buffers, NodeId computes) {
    kernel_nodes_.push_back(computes);
    buffer_nodes.push_back(std::move(buffers));
    kernels_.push_back(std::move(k));
    kernel_group_.push_back(-1);
    kernel_moves_.emplace_back();
  };
  // Schedules: a test's chooser, or the search (cache hits, then measured
  // candidates within the budget, shared by kernels in proportion to their work).
  std::vector<NodeId> todo;
  auto is_write = [&](NodeId n) {
    return std::any_of(writes_.begin(), writes_.end(), [&](const Write& w) { return w.copy == n; });
  };
  for (NodeId n : p.kernels) {
    if (!needed_[static_cast<size_t>(n)] || is_write(n)) continue;
    todo.push_back(n);
  }
  search::SearchOptions search_options = options.search;
  todo = slice_kernels(std::move(todo), options.slice, search_options);
  search::ScheduleSearch search(*graph_, materialized_, search_options, target);
  // The budget goes to distinct kernels (a repeated layer is searched once),
  // in proportion to their work; kernels whose share would be too small to
  // search are left to the heuristic and their share goes to the rest. The
  // shares do not depend on what the tuning cache holds, so a second compile
  // of the same program finds every searched kernel there and searches nothing.
  double budget = options.search.budget_s;
  std::map<NodeId, double> share;
  if (budget > 0 && !options.choose) {
    std::map<std::string, std::pair<NodeId, double>> distinct;  // key -> (first node, work of all its instances)
    for (NodeId n : todo) {
      double w = std::max(kernel::kernel_facts(*graph_, n, materialized_, target).work, 1.0);
      auto [it, fresh] = distinct.emplace(search.key(n), std::make_pair(n, 0.0));
      it->second.second += w;
    }
    std::vector<std::pair<double, NodeId>> by_work;
    for (const auto& [key, entry] : distinct) by_work.emplace_back(entry.second, entry.first);
    std::sort(by_work.rbegin(), by_work.rend());
    while (!by_work.empty()) {  // drop the lightest until every share is worth searching
      double total = 0;
      for (const auto& [w, n] : by_work) total += w;
      if (budget * by_work.back().first / total >= search::ScheduleSearch::kMinSeconds || by_work.size() == 1) {
        for (const auto& [w, n] : by_work) share[n] = budget * w / total;
        break;
      }
      by_work.pop_back();
    }
  }
  if (budget > 0 && !options.choose) choose_chunks(search, share, todo);
  for (size_t i = 0; i < todo.size(); ++i) {
    NodeId n = todo[i];
    auto s = share.find(n);
    std::vector<kernel::Action> actions = options.choose ? options.choose(*graph_, n, materialized_)
                                                         : search.choose(n, s == share.end() ? 0.0 : s->second);
    kernel::Schedule schedule = kernel::Schedule::from_actions(graph_->node(n).shape, actions);
    kernel::LoweredKernel lk =
        kernel::lower(*graph_, n, materialized_, schedule, "k" + std::to_string(kernels_.size()));
    // Scratch buffers get program-wide numbers.
    auto global = [&](std::vector<NodeId> buffers) {
      for (NodeId& b : buffers) {
        if (b < 0) b = -1 - static_cast<NodeId>(scratch_.size() + static_cast<size_t>(-1 - b));
      }
      return buffers;
    };
    size_t first = kernels_.size();
    for (size_t i = 0; i < lk.pre_kernels.size(); ++i) add(std::move(lk.pre_kernels[i]), global(lk.pre_buffer_nodes[i]), -1);
    add(std::move(lk.kernel), global(lk.buffer_nodes), n);
    attach_to_group(first, n, buffer_nodes);
    for (const kernel::ScratchBuffer& sb : lk.scratch) scratch_.push_back(sb);
  }
  // State writes run last, so every kernel reads the state as it was before the run.
  for (const Write& w : writes_) {
    const Node& copy = graph_->node(w.copy);
    kernel::LowerOptions lo;
    lo.store_node = w.state;
    lo.store_view = w.view;
    kernel::Schedule schedule = kernel::Schedule::from_actions(copy.shape, kernel::heuristic_actions(*graph_, w.copy, materialized_, target));
    kernel::LoweredKernel lk = kernel::lower(*graph_, w.copy, materialized_, schedule, "k" + std::to_string(kernels_.size()), lo);
    add(std::move(lk.kernel), lk.buffer_nodes, kWriteLaunch);
  }
  search_report_ = search.report();
  report_.kernels = static_cast<int>(kernels_.size());
  report_.lower_seconds = seconds_since(start);

  start = std::chrono::steady_clock::now();
  // Kernels are named by what they compute: repeated layers share one function.
  for (kernel::Kernel& k : kernels_) k.name = cpu::content_name(k);
  int parts = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::string> sources = cpu::render_sources(kernels_, parts);
  source_.clear();
  for (const std::string& s : sources) source_ += s;
  report_.codegen_seconds = seconds_since(start);
  if (debug_kernels()) {
    for (const kernel::Kernel& k : kernels_) std::cerr << kernel::to_string(k) << "\n";
    std::cerr << source_ << "\n";
  }
  if (kernels_.empty()) return;
  cpu::CompileInfo info;
  library_ = cpu::compile_and_load(sources, &info);
  report_.compile_seconds = info.seconds;
  report_.cache_hit = info.cache_hit;
  report_.object_path = info.object_path;
  for (size_t i = 0; i < kernels_.size(); ++i) {
    Launch l;
    l.run = reinterpret_cast<cpu::KernelEntry>(library_->symbol("lumen_" + kernels_[i].name));
    l.tasks = reinterpret_cast<cpu::KernelTasks>(library_->symbol("lumen_" + kernels_[i].name + "_tasks"));
    l.buffers = buffer_nodes[i];
    l.kernel = i;
    l.group = kernel_group_[i];
    l.moves = kernel_moves_[i];
    launches_.push_back(std::move(l));
  }
  find_kept_packs();
}

std::vector<SearchTrace> CpuExecutor::search_trace() const {
  std::vector<SearchTrace> out;
  for (const search::KernelReport& k : search_report_.kernels) {
    if (k.source == "search" && !k.progress.empty()) out.push_back({k.fuses, k.progress, k.baseline_ms, k.best_ms});
  }
  return out;
}

std::string CpuExecutor::profile_report() const {
  if (!profile_ || runs_ == 0) return "";
  // Launches of the same kernel (repeated layers) are summed.
  struct Entry {
    double seconds = 0;
    int launches = 0;
    size_t first = 0;
  };
  std::map<std::string, Entry> by_name;
  double total = 0;
  for (size_t k = 0; k < launches_.size(); ++k) {
    const std::string& name = kernels_[launches_[k].kernel].name;
    Entry& e = by_name[name];
    if (e.launches++ == 0) e.first = k;
    e.seconds += launch_seconds_[k];
    total += launch_seconds_[k];
  }
  std::vector<std::pair<std::string, Entry>> order(by_name.begin(), by_name.end());
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  std::ostringstream out;
  char line[512];
  double per_run = 1e3 / static_cast<double>(runs_);
  std::snprintf(line, sizeof line, "profile: %lld run(s), %.3f ms per run in %zu launches of %zu kernels\n",
                static_cast<long long>(runs_), total * per_run, launches_.size(), order.size());
  out << line;
  for (size_t i = 0; i < order.size() && i < 20; ++i) {
    const auto& [name, e] = order[i];
    const kernel::Kernel& kern = kernels_[launches_[e.first].kernel];
    std::string fused;
    for (size_t f = 0; f < kern.fused.size() && f < 5; ++f) fused += (f ? " " : "") + kern.fused[f];
    std::snprintf(line, sizeof line, "  %8.3f ms %5.1f%%  x%-3d %s  %s\n", e.seconds * per_run,
                  total > 0 ? 100 * e.seconds / total : 0.0, e.launches, name.c_str(), fused.c_str());
    out << line;
  }
  return out.str();
}

std::string CpuExecutor::kernels_dot() const {
  std::ostringstream out;
  out << "digraph kernels {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n";
  // Which launch writes each buffer (graph node or scratch).
  std::map<NodeId, size_t> writer;
  std::set<NodeId> inputs_drawn;
  for (size_t k = 0; k < launches_.size(); ++k) {
    const kernel::Kernel& kern = kernels_[launches_[k].kernel];
    std::string fused;
    for (size_t f = 0; f < kern.fused.size() && f < 6; ++f) fused += (f ? " " : "") + kern.fused[f];
    if (kern.fused.size() > 6) fused += " +" + std::to_string(kern.fused.size() - 6);
    std::string loops;
    std::function<void(const kernel::Block&)> walk = [&](const kernel::Block& b) {
      for (const kernel::Stmt& s : b) {
        if (s.kind != kernel::StmtKind::Loop) continue;
        loops += std::string(loops.empty() ? "" : " ") + kernel::loop_kind_name(s.loop);
        walk(s.body);
        return;  // the first nest is enough for a picture
      }
    };
    walk(kern.body);
    const char* fill = kernel_nodes_[k] == kWriteLaunch ? "#ffe8cc" : kernel_nodes_[k] == -1 ? "#eeeeee" : "#dff5df";
    out << "  k" << k << " [fillcolor=\"" << fill << "\", label=\"" << dot_escape(kern.name) << "\\n" << dot_escape(fused)
        << "\\nloops: " << dot_escape(loops) << "\"];\n";
    for (size_t b = 0; b < launches_[k].buffers.size(); ++b) {
      NodeId buf = launches_[k].buffers[b];
      if (kern.buffers[b].output) {
        writer[buf] = k;
        continue;
      }
      auto w = writer.find(buf);
      if (w != writer.end()) {
        out << "  k" << w->second << " -> k" << k << ";\n";
      } else if (buf >= 0 && graph_->node(buf).op == Op::Input) {
        const Node& n = graph_->node(buf);
        if (inputs_drawn.insert(buf).second) {
          out << "  in" << buf << " [shape=note, fillcolor=\"#d8ecff\", label=\"" << dot_escape(n.name) << "\\n"
              << dot_escape(to_string(n.shape)) << "\"];\n";
        }
        out << "  in" << buf << " -> k" << k << " [color=\"#99aabb\"];\n";
      }
    }
  }
  out << "}\n";
  return out.str();
}

// A pack that reads only parameters and makes no more bytes than it reads
// (a relayout, not a dequantization) is done once and kept between runs,
// outside the arena, until one of its parameters is set again.
void CpuExecutor::find_kept_packs() {
  kept_.assign(scratch_.size(), Array());
  kept_valid_.assign(scratch_.size(), false);
  kept_inputs_.assign(scratch_.size(), {});
  for (size_t k = 0; k < launches_.size(); ++k) {
    if (kernel_nodes_[k] != -1 || launches_[k].group >= 0) continue;  // a chunk's pack moves with the chunk
    const Launch& l = launches_[k];
    auto s = static_cast<size_t>(-1 - l.buffers[0]);
    const kernel::ScratchBuffer& sb = scratch_[s];
    if (!sb.elements.is_const()) continue;
    bool parameters = true;
    int64_t read = 0;
    std::vector<std::string> names;
    for (size_t b = 1; b < l.buffers.size(); ++b) {
      NodeId id = l.buffers[b];
      const Node* node = id >= 0 ? &graph_->node(id) : nullptr;
      if (!node || node->op != Op::Input || !node->parameter) {
        parameters = false;
        break;
      }
      int64_t numel = 1;
      for (const Expr& d : node->shape) numel *= d.is_const() ? d.value() : 0;
      read += numel * static_cast<int64_t>(dtype_size(node->dtype));
      names.push_back(node->name);
    }
    int64_t made = sb.elements.value() * static_cast<int64_t>(dtype_size(sb.dtype));
    if (!parameters || names.empty() || made > read) continue;
    kept_[s] = Array(sb.dtype, {sb.elements.value()});
    kept_inputs_[s] = names;
  }
}

void CpuExecutor::invalidate(const std::string& input) {
  for (size_t s = 0; s < kept_inputs_.size(); ++s) {
    for (const std::string& name : kept_inputs_[s]) {
      if (name == input) kept_valid_[s] = false;
    }
  }
}

std::map<std::string, double> CpuExecutor::stats() const {
  return {{"kernels", report_.kernels},
          {"fusion_rounds", report_.fusion_rounds},
          {"fusion_seconds", report_.fusion_seconds},
          {"lower_seconds", report_.lower_seconds},
          {"codegen_seconds", report_.codegen_seconds},
          {"compile_seconds", report_.compile_seconds},
          {"object_cache_hit", report_.cache_hit ? 1.0 : 0.0},
          {"arena_bytes", static_cast<double>(plan_.arena_bytes)},
          {"kept_pack_bytes", [&] {
             double b = 0;
             for (const Array& a : kept_) b += a.defined() ? static_cast<double>(a.nbytes()) : 0.0;
             return b;
           }()},
          {"peak_live_bytes", static_cast<double>(plan_.peak_live_bytes)},
          {"search_seconds", search_report_.seconds},
          {"search_timing_runs", static_cast<double>(search_report_.timing_runs)},
          {"search_cache_hits", static_cast<double>(search_report_.cache_hits)},
          {"sliced_groups", static_cast<double>(groups_.size())}};
}

void CpuExecutor::find_lifetimes() {
  lives_.clear();
  life_keys_.clear();
  buffer_index_.assign(graph_->size(), -1);
  scratch_index_.assign(scratch_.size(), -1);
  std::vector<bool> is_output(graph_->size(), false);
  for (const Edge& e : outputs_) is_output[static_cast<size_t>(e.node)] = true;
  // A buffer lives from the launch that writes it to the last launch that reads it.
  std::map<NodeId, int> last_use;
  for (size_t k = 0; k < launches_.size(); ++k) {
    for (NodeId b : launches_[k].buffers) last_use[b] = static_cast<int>(k);
  }
  auto life = [&](NodeId key, size_t k) {
    life_keys_.push_back(key);
    lives_.push_back({0, static_cast<int>(k), std::max(static_cast<int>(k), last_use[key])});
    return static_cast<int64_t>(lives_.size() - 1);
  };
  for (size_t k = 0; k < launches_.size(); ++k) {
    NodeId n = kernel_nodes_[k];
    if (n >= 0 && !is_output[static_cast<size_t>(n)]) buffer_index_[static_cast<size_t>(n)] = life(n, k);
    // A scratch buffer lives from the first launch that uses it: the pre-kernel
    // that packs it, or the kernel that packs it inside (pack_inline).
    for (NodeId key : launches_[k].buffers) {
      if (key >= 0) continue;
      auto s = static_cast<size_t>(-1 - key);
      if (kept_[s].defined() || scratch_index_[s] >= 0) continue;  // packed parameters live outside the arena
      scratch_index_[s] = life(key, k);
    }
  }
  extend_group_lifetimes();
  slot_bytes_.assign(lives_.size(), -1);
}

void CpuExecutor::plan(const std::vector<int64_t>& dims, const Bindings& bindings) {
  if (planned_ && dims == planned_dims_) return;
  if (!planned_) find_lifetimes();
  std::vector<int64_t> bytes(lives_.size());
  bool fits = planned_;
  for (size_t i = 0; i < lives_.size(); ++i) {
    NodeId key = life_keys_[i];
    if (key >= 0) {
      const Node& node = graph_->node(key);
      bytes[i] = bytes_of(node.shape, node.dtype, bindings);
    } else {
      const kernel::ScratchBuffer& sb = scratch_[static_cast<size_t>(-1 - key)];
      bytes[i] = checked_byte_size({evaluate(sb.elements, bindings)}, sb.dtype, "run: a scratch buffer");
    }
    fits = fits && bytes[i] <= slot_bytes_[i];
  }
  if (!fits) {
    // A replan after the first gives growing buffers an eighth more room, so
    // a dim that grows step by step replans a logarithmic number of times.
    for (size_t i = 0; i < lives_.size(); ++i) {
      bool grew = planned_ && bytes[i] > slot_bytes_[i];
      lives_[i].bytes = grew ? checked_add(bytes[i], bytes[i] / 8) : bytes[i];
    }
    plan_ = plan_memory(lives_);
    for (size_t i = 0; i < lives_.size(); ++i) slot_bytes_[i] = lives_[i].bytes;
    if (plan_.arena_bytes > arena_capacity_) {
      int64_t bytes_wanted = planned_ ? checked_add(plan_.arena_bytes, plan_.arena_bytes / 8) : plan_.arena_bytes;
      arena_ = allocate_host(static_cast<size_t>(bytes_wanted), false);
      arena_capacity_ = bytes_wanted;
    }
  }
  planned_dims_ = dims;
  planned_ = true;
}

std::vector<Array> CpuExecutor::execute(const std::map<std::string, Array>& inputs, const Bindings& given) {
  if (profile_) {
    launch_seconds_.resize(launches_.size(), 0.0);
    ++runs_;
  }
  Bindings bindings = given;
  for (const kernel::SliceGroup& g : groups_) {  // chunk origins: set per chunk by run_group
    for (const kernel::SliceAxis& a : g.axes) {
      if (!a.origin_dim.empty()) bindings[a.origin_dim] = 0;
    }
  }
  graph_->bind_inputs(inputs, needed_, bindings);
  std::vector<int64_t> dims;
  for (const std::string& name : graph_->dim_names()) dims.push_back(bindings.at(name));
  plan(dims, bindings);

  // Output arrays: reused when the caller no longer holds the previous ones.
  if (results_.size() != outputs_.size()) results_.assign(outputs_.size(), Array());
  std::vector<void*> pointer(graph_->size(), nullptr);
  for (size_t o = 0; o < outputs_.size(); ++o) {
    const Node& n = graph_->node(outputs_[o].node);
    std::vector<int64_t> shape;  // the output's view is contiguous, possibly reshaped
    for (const Expr& d : outputs_[o].view.shape()) shape.push_back(evaluate(d, bindings));
    bool reuse = results_[o].defined() && results_[o].shape() == shape && results_[o].dtype() == n.dtype &&
                 results_[o].owner_count() == 1;
    if (!reuse) results_[o] = Array(n.dtype, shape);
    pointer[static_cast<size_t>(outputs_[o].node)] = results_[o].data();
  }
  for (NodeId id : graph_->input_ids()) {
    auto it = inputs.find(graph_->node(id).name);
    if (it != inputs.end()) pointer[static_cast<size_t>(id)] = const_cast<void*>(it->second.data());
  }
  for (size_t n = 0; n < graph_->size(); ++n) {
    if (buffer_index_[n] >= 0) pointer[n] = arena_.get() + plan_.offsets[static_cast<size_t>(buffer_index_[n])];
  }
  std::vector<void*> scratch(scratch_.size(), nullptr);
  for (size_t i = 0; i < scratch_.size(); ++i) {
    if (scratch_index_[i] >= 0) scratch[i] = arena_.get() + plan_.offsets[static_cast<size_t>(scratch_index_[i])];
    if (kept_[i].defined()) scratch[i] = kept_[i].data();
  }

  std::shared_ptr<cpu::ThreadPool> pool_owner = cpu::ThreadPool::global();
  cpu::ThreadPool& pool = *pool_owner;
  auto launch = [&](size_t k, const std::vector<void*>& args) {
    const Launch& l = launches_[k];
    auto t0 = std::chrono::steady_clock::now();
    cpu::KernelStatus status = cpu::launch(pool, l.run, l.tasks, args.data(), dims.data());
    if (profile_) launch_seconds_[k] += seconds_since(t0);
    if (status.failed) {
      std::string fused;
      for (const std::string& f : kernels_[k].fused) {
        if (f.rfind("Gather", 0) == 0) fused += (fused.empty() ? "" : ", ") + f;
      }
      fail("gather: index ", status.value, " is out of range for an axis of size ", status.bound, " (in ",
           fused.empty() ? kernels_[k].name : fused, "); indices must be in [0, ", status.bound, ")");
    }
  };
  std::vector<void*> args;
  for (size_t k = 0; k < launches_.size(); ++k) {
    const Launch& l = launches_[k];
    if (l.group >= 0) {
      k = run_group(k, bindings, dims, pointer, scratch, launch);
      continue;
    }
    if (kernel_nodes_[k] == -1) {  // a pack of parameters already done: skip
      auto s = static_cast<size_t>(-1 - l.buffers[0]);
      if (kept_[s].defined()) {
        if (kept_valid_[s]) continue;
        kept_valid_[s] = true;
      }
    }
    args.clear();
    for (NodeId b : l.buffers) args.push_back(b >= 0 ? pointer[static_cast<size_t>(b)] : scratch[static_cast<size_t>(-1 - b)]);
    launch(k, args);
  }
  std::vector<Array> out;
  for (size_t o = 0; o < outputs_.size(); ++o) out.push_back(results_[o]);
  return out;
}

}  // namespace lumen
