#include "lumen/runtime/compiled_executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "lumen/core/debug_flags.h"
#include "lumen/core/error.h"
#include "lumen/core/host_memory.h"
#include "lumen/core/int_math.h"
#include "lumen/core/stopwatch.h"
#include "lumen/runtime/memory_report.h"

namespace lumen {

namespace {

// A kernel found a gather index out of range (`where`: the gathers it fuses, if known).
[[noreturn]] void fail_gather(const backend::LaunchStatus& status, const std::string& where) {
  fail("gather: index ", status.value, " is out of range for an axis of size ", status.bound,
       where.empty() ? "" : " (in " + where + ")", "; indices must be in [0, ", status.bound, ")");
}

int64_t bytes_of(const Shape& shape, DType dtype, const Bindings& b) {
  std::vector<int64_t> dims;
  for (const Expr& d : shape) dims.push_back(evaluate(d, b));
  return checked_byte_size(dims, dtype, "run: a buffer");
}

}  // namespace

CompiledExecutor::CompiledExecutor(backend::CompiledProgram program) : program_(std::move(program)) {
  const char* p = std::getenv("LUMEN_PROFILE");
  profile_ = p && *p && std::string(p) != "0";
  profile_all_ = profile_ && std::string(p) == "all";
  kept_.assign(program_.scratch.size(), Array());
  kept_valid_.assign(program_.scratch.size(), false);
  for (size_t s = 0; s < program_.scratch.size(); ++s) {
    const backend::Scratch& sb = program_.scratch[s];
    if (!sb.kept_inputs.empty()) kept_[s] = Array(sb.dtype, {sb.elements.value()});
  }
  if (program_.backend && program_.backend->capabilities().device_memory) {
    device_ = std::make_unique<DeviceResidency>(program_.backend);
  }
}

std::string CompiledExecutor::profile_report() const {
  if (!profile_ || runs_ == 0) return "";
  // Launches of the same kernel (repeated layers) are summed.
  struct Entry {
    double seconds = 0;
    int launches = 0;
    size_t first = 0;
  };
  std::map<std::string, Entry> by_name;
  double total = 0;
  for (size_t k = 0; k < program_.launches.size(); ++k) {
    const std::string& name = program_.kernels[program_.launches[k].kernel].name;
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
                static_cast<long long>(runs_), total * per_run, program_.launches.size(), order.size());
  out << line;
  for (size_t i = 0; i < order.size() && (profile_all_ || i < 20); ++i) {
    const auto& [name, e] = order[i];
    const kernel::Kernel& kern = program_.kernels[program_.launches[e.first].kernel];
    std::string fused;
    for (size_t f = 0; f < kern.fused.size() && f < 5; ++f) fused += (f ? " " : "") + kern.fused[f];
    std::snprintf(line, sizeof line, "  %8.3f ms %5.1f%%  x%-3d %s  %s\n", e.seconds * per_run,
                  total > 0 ? 100 * e.seconds / total : 0.0, e.launches, name.c_str(), fused.c_str());
    out << line;
  }
  return out.str();
}

std::string CompiledExecutor::kernels_dot() const {
  std::ostringstream out;
  out << "digraph kernels {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n";
  // Which launch writes each buffer (graph node or scratch).
  std::map<NodeId, size_t> writer;
  std::set<NodeId> inputs_drawn;
  for (size_t k = 0; k < program_.launches.size(); ++k) {
    const kernel::Kernel& kern = program_.kernels[program_.launches[k].kernel];
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
    NodeId computes = program_.launches[k].computes;
    const char* fill = computes == backend::kWriteLaunch  ? "#ffe8cc"
                       : computes == backend::kPackLaunch ? "#eeeeee"
                                                          : "#dff5df";
    out << "  k" << k << " [fillcolor=\"" << fill << "\", label=\"" << dot_escape(kern.name) << "\\n" << dot_escape(fused)
        << "\\nloops: " << dot_escape(loops) << "\"];\n";
    for (size_t b = 0; b < program_.launches[k].buffers.size(); ++b) {
      NodeId buf = program_.launches[k].buffers[b];
      if (kern.buffers[b].output) {
        writer[buf] = k;
        continue;
      }
      auto w = writer.find(buf);
      if (w != writer.end()) {
        out << "  k" << w->second << " -> k" << k << ";\n";
      } else if (buf >= 0 && graph().node(buf).op == Op::Input) {
        const Node& n = graph().node(buf);
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

void CompiledExecutor::invalidate(const std::string& input) {
  inputs_set_.insert(input);
  for (size_t s = 0; s < program_.scratch.size(); ++s) {
    for (const std::string& name : program_.scratch[s].kept_inputs) {
      if (name == input) kept_valid_[s] = false;
    }
  }
}

std::map<std::string, double> CompiledExecutor::stats() const {
  std::map<std::string, double> out = program_.stats;
  out["arena_bytes"] = static_cast<double>(plan_.arena_bytes);
  out["peak_live_bytes"] = static_cast<double>(plan_.peak_live_bytes);
  double kept = 0;
  for (const Array& a : kept_) kept += a.defined() ? static_cast<double>(a.nbytes()) : 0.0;
  out["kept_pack_bytes"] = kept;
  if (device_) out["device_bytes"] = static_cast<double>(device_->device_bytes());
  return out;
}

void CompiledExecutor::find_lifetimes() {
  lives_.clear();
  life_keys_.clear();
  buffer_index_.assign(graph().size(), -1);
  scratch_index_.assign(program_.scratch.size(), -1);
  std::vector<bool> is_output(graph().size(), false);
  for (const Edge& e : program_.outputs) is_output[static_cast<size_t>(e.node)] = true;
  // A buffer lives from the launch that writes it to the last launch that reads it.
  std::map<NodeId, int> last_use;
  for (size_t k = 0; k < program_.launches.size(); ++k) {
    for (NodeId b : program_.launches[k].buffers) last_use[b] = static_cast<int>(k);
  }
  auto life = [&](NodeId key, size_t k) {
    life_keys_.push_back(key);
    lives_.push_back({0, static_cast<int>(k), std::max(static_cast<int>(k), last_use[key])});
    return static_cast<int64_t>(lives_.size() - 1);
  };
  for (size_t k = 0; k < program_.launches.size(); ++k) {
    NodeId n = program_.launches[k].computes;
    if (n >= 0 && !is_output[static_cast<size_t>(n)]) buffer_index_[static_cast<size_t>(n)] = life(n, k);
    // A scratch buffer lives from the first launch that uses it: the pre-kernel
    // that packs it, or the kernel that packs it inside (pack_inline).
    for (NodeId key : program_.launches[k].buffers) {
      if (key >= 0) continue;
      auto s = static_cast<size_t>(-1 - key);
      if (kept_[s].defined() || scratch_index_[s] >= 0) continue;  // packed parameters live outside the arena
      scratch_index_[s] = life(key, k);
    }
  }
  extend_group_lifetimes();
  slot_bytes_.assign(lives_.size(), -1);
  fixed_bytes_.assign(lives_.size(), -1);
  for (size_t i = 0; i < lives_.size(); ++i) {  // sizes no dynamic dim changes are worked out once
    NodeId key = life_keys_[i];
    if (key >= 0) {
      const Node& node = graph().node(key);
      bool fixed = std::all_of(node.shape.begin(), node.shape.end(), [](const Expr& d) { return d.is_const(); });
      if (fixed) fixed_bytes_[i] = bytes_of(node.shape, node.dtype, {});
    } else {
      const backend::Scratch& sb = program_.scratch[static_cast<size_t>(-1 - key)];
      if (sb.elements.is_const()) fixed_bytes_[i] = checked_byte_size({sb.elements.value()}, sb.dtype, "run: a scratch buffer");
    }
  }
  arena_nodes_.clear();
  for (size_t n = 0; n < buffer_index_.size(); ++n) {
    if (buffer_index_[n] >= 0) arena_nodes_.push_back(static_cast<NodeId>(n));
  }
}

void CompiledExecutor::plan(const std::vector<int64_t>& dims, const Bindings& bindings) {
  if (planned_ && dims == planned_dims_) return;
  if (!planned_) find_lifetimes();
  std::vector<int64_t> bytes(lives_.size());
  bool fits = planned_;
  for (size_t i = 0; i < lives_.size(); ++i) {
    NodeId key = life_keys_[i];
    if (fixed_bytes_[i] >= 0) {
      bytes[i] = fixed_bytes_[i];
    } else if (key >= 0) {
      const Node& node = graph().node(key);
      bytes[i] = bytes_of(node.shape, node.dtype, bindings);
    } else {
      const backend::Scratch& sb = program_.scratch[static_cast<size_t>(-1 - key)];
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
    if (debug_enabled("memory")) std::fputs(peak_memory_report(program_, lives_, life_keys_, plan_).c_str(), stderr);
    if (plan_.arena_bytes > arena_capacity_) {
      int64_t bytes_wanted = planned_ ? checked_add(plan_.arena_bytes, plan_.arena_bytes / 8) : plan_.arena_bytes;
      if (!device_) arena_ = allocate_host(static_cast<size_t>(bytes_wanted), false);  // else device_'s slot
      arena_capacity_ = bytes_wanted;
    }
  }
  planned_dims_ = dims;
  planned_ = true;
}

std::vector<Array> CompiledExecutor::execute_by_node(const NodeArrays& inputs, const Bindings& given) {
  if (profile_) {
    launch_seconds_.resize(program_.launches.size(), 0.0);
    ++runs_;
  }
  Bindings bindings = given;
  for (const kernel::SliceGroup& g : program_.groups) {  // chunk origins: set per chunk by run_group
    for (const kernel::SliceAxis& a : g.axes) {
      if (!a.origin_dim.empty()) bindings[a.origin_dim] = 0;
    }
  }
  graph().bind_inputs(inputs, program_.needed, bindings);
  std::vector<int64_t> dims;
  for (const std::string& name : graph().dim_names()) dims.push_back(bindings.at(name));
  plan(dims, bindings);

  // Output arrays: reused when the caller no longer holds the previous ones.
  if (results_.size() != program_.outputs.size()) results_.assign(program_.outputs.size(), Array());
  std::vector<void*> pointer(graph().size(), nullptr);
  for (size_t o = 0; o < program_.outputs.size(); ++o) {
    const Node& n = graph().node(program_.outputs[o].node);
    std::vector<int64_t> shape;  // the output's view is contiguous, possibly reshaped
    for (const Expr& d : program_.outputs[o].view.shape()) shape.push_back(evaluate(d, bindings));
    bool reuse = results_[o].defined() && results_[o].shape() == shape && results_[o].dtype() == n.dtype &&
                 results_[o].owner_count() == 1;
    if (!reuse) results_[o] = Array(n.dtype, shape);
    pointer[static_cast<size_t>(program_.outputs[o].node)] = results_[o].data();
  }
  for (NodeId id : graph().input_ids()) {
    const Array* a = inputs[static_cast<size_t>(id)];
    if (a) pointer[static_cast<size_t>(id)] = const_cast<void*>(a->data());
  }
  unsigned char* arena = device_ ? static_cast<unsigned char*>(device_->slot(DeviceResidency::Arena, 0, static_cast<size_t>(arena_capacity_)))
                                 : arena_.get();
  for (NodeId n : arena_nodes_) {
    pointer[static_cast<size_t>(n)] = arena + plan_.offsets[static_cast<size_t>(buffer_index_[static_cast<size_t>(n)])];
  }
  std::vector<void*> scratch(program_.scratch.size(), nullptr);
  for (size_t i = 0; i < program_.scratch.size(); ++i) {
    if (scratch_index_[i] >= 0) scratch[i] = arena + plan_.offsets[static_cast<size_t>(scratch_index_[i])];
    if (kept_[i].defined()) scratch[i] = kept_[i].data();
  }

  const backend::Backend& backend = *program_.backend;
  std::shared_ptr<backend::Queue> queue = device_ ? backend.device_queue() : backend.queue();  // held for the run
  if (device_) to_device(*queue, inputs, pointer, scratch);
  auto launch = [&](size_t k, const std::vector<void*>& args) {
    const backend::Launch& l = program_.launches[k];
    auto t0 = std::chrono::steady_clock::now();
    backend::LaunchStatus status = backend.launch(*queue, l.entry, args.data(), dims.data());
    if (profile_ && device_) status = backend.finish(*queue);  // time each launch to its end
    if (profile_) launch_seconds_[k] += seconds_since(t0);
    if (status.failed) {
      std::string fused;
      for (const std::string& f : program_.kernels[l.kernel].fused) {
        if (f.rfind("Gather", 0) == 0) fused += (fused.empty() ? "" : ", ") + f;
      }
      fail_gather(status, fused.empty() ? program_.kernels[l.kernel].name : fused);
    }
  };
  std::vector<void*> args;
  for (size_t k = 0; k < program_.launches.size(); ++k) {
    const backend::Launch& l = program_.launches[k];
    if (l.group >= 0) {
      k = run_group(k, bindings, dims, pointer, scratch, launch);
      continue;
    }
    if (program_.launches[k].computes == backend::kPackLaunch) {  // a pack of parameters already done: skip
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
  if (device_) {
    to_host(*queue, inputs, pointer);
    backend::LaunchStatus status = backend.finish(*queue);
    if (status.failed) fail_gather(status, "");  // which of the run's launches is not known
    inputs_set_.clear();
  }
  std::vector<Array> out;
  for (size_t o = 0; o < program_.outputs.size(); ++o) out.push_back(results_[o]);
  return out;
}

void CompiledExecutor::to_device(backend::Queue& queue, const NodeArrays& inputs, std::vector<void*>& pointer,
                                 std::vector<void*>& scratch) {
  for (size_t o = 0; o < program_.outputs.size(); ++o) {
    auto n = static_cast<size_t>(program_.outputs[o].node);
    pointer[n] = device_->slot(DeviceResidency::Output, o, static_cast<size_t>(results_[o].nbytes()));
  }
  for (NodeId id : graph().input_ids()) {
    const Array* a = inputs[static_cast<size_t>(id)];
    if (!a || !pointer[static_cast<size_t>(id)]) continue;
    const Node& n = graph().node(id);
    bool changed = n.persistent || inputs_set_.count(n.name);  // a state: another program may have written it
    pointer[static_cast<size_t>(id)] = device_->input(queue, id, a->data(), static_cast<size_t>(a->nbytes()), changed);
  }
  for (size_t i = 0; i < program_.scratch.size(); ++i) {
    if (kept_[i].defined()) scratch[i] = device_->slot(DeviceResidency::Kept, i, static_cast<size_t>(kept_[i].nbytes()));
  }
}

void CompiledExecutor::to_host(backend::Queue& queue, const NodeArrays& inputs, const std::vector<void*>& pointer) {
  const backend::Backend& backend = *program_.backend;
  for (size_t o = 0; o < program_.outputs.size(); ++o) {
    const void* device = pointer[static_cast<size_t>(program_.outputs[o].node)];
    backend.copy_to_host(queue, results_[o].data(), device, static_cast<size_t>(results_[o].nbytes()));
  }
  for (NodeId id : graph().input_ids()) {  // state writes land in the state's device copy
    const Array* a = inputs[static_cast<size_t>(id)];
    void* device = pointer[static_cast<size_t>(id)];
    if (graph().node(id).persistent && a && device) backend.copy_to_host(queue, const_cast<void*>(a->data()), device, static_cast<size_t>(a->nbytes()));
  }
}

}  // namespace lumen
