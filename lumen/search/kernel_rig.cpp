#include "lumen/search/kernel_rig.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cmath>
#include <future>
#include <random>
#include <sstream>

#include "lumen/backend/interp/point_evaluator.h"
#include "lumen/core/error.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/host_memory.h"
#include "lumen/kernel/known_region.h"

namespace lumen::search {

namespace {

std::vector<int64_t> concrete(const Shape& shape, const Bindings& b) {
  std::vector<int64_t> dims;
  for (const Expr& d : shape) dims.push_back(evaluate(d, b));
  return dims;
}

// Integers (and bools) must be equal; floats within a tolerance.
bool agree(const Scalar& got_value, const Scalar& want_value, double scale) {
  if (got_value.integral && want_value.integral) return got_value.i == want_value.i;
  double got = got_value.to_double(), want = want_value.to_double();
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= 1e-3 * (std::fabs(want) + scale) + 1e-6;
}

// Where a materialised producer's value is known without running it (a
// causal mask's -inf, padding's 0: kernel/known_region.h), the rig's random
// buffer holds that value too, as the program's buffer does. Kernels that
// read only the live region of their inputs are then checked on data that
// satisfies what they assume, instead of disagreeing with a reference that
// reads random values where the program never has any.
void fill_known(const Graph& graph, NodeId n, const Bindings& dims, Array& a) {
  const Node& node = graph.node(n);
  if (node.op == Op::Input || a.numel() == 0) return;
  std::vector<Expr> coords;
  std::vector<std::string> slots;
  for (size_t d = 0; d < node.shape.size(); ++d) {
    slots.push_back("rig_c" + std::to_string(d));
    coords.push_back(Expr::index(slots.back(), node.shape[d]));
  }
  kernel::KnownRegions regions(graph);
  kernel::Known k = regions.at(n, coords);
  if (!k.knows_something()) return;
  bool exact = k.exact.defined();
  ExprProgram program;
  try {
    program = ExprProgram(exact ? k.exact : kernel::as_predicate(k.live), slots, dims);
  } catch (const Error&) {
    return;  // knowledge over variables the rig does not bind: random data it is
  }
  const std::vector<int64_t>& shape = a.shape();
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < a.numel(); ++i) {
    int64_t v = program.run(idx.data());
    if (exact) a.set(i, static_cast<double>(v));
    else if (v == 0) a.set(i, k.value);
    for (size_t d = idx.size(); d-- > 0;) {  // next coordinates, row-major
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

KernelRig::KernelRig(const Graph& graph, NodeId node, const std::vector<bool>& materialized, const Bindings& dims,
                     std::shared_ptr<const backend::Backend> backend, bool parameters_warm)
    : graph_(graph), backend_(std::move(backend)), node_(node), materialized_(materialized), dims_(dims),
      parameters_warm_(parameters_warm) {
  device_memory_ = backend_->capabilities().device_memory;
  for (const std::string& d : graph.dim_names()) dim_values_.push_back(dims_.at(d));
  const Node& n = graph.node(node);
  output_ = Array(n.dtype, concrete(n.shape, dims_));
  // The reference: sampled output elements from the per-element evaluator,
  // reading the same random inputs the candidates read.
  kernel::LoweredKernel plain = kernel::lower(graph, node, materialized, kernel::Schedule(n.shape), "reference");
  std::map<NodeId, const Array*> buffers;
  for (NodeId b : plain.buffer_nodes) {
    if (b >= 0 && b != node) buffers[b] = &buffer(b);
  }
  if (output_.numel() == 0) return;
  interp::PointEvaluator reference(graph, buffers, dims_);
  std::mt19937_64 rng(11);
  std::vector<int64_t> flats{0, output_.numel() - 1};
  for (int i = 0; i < 14; ++i) flats.push_back(std::uniform_int_distribution<int64_t>(0, output_.numel() - 1)(rng));
  double total = 0;
  try {
    for (int64_t f : flats) {
      std::vector<int64_t> idx(output_.shape().size());
      int64_t rest = f;
      for (size_t d = idx.size(); d-- > 0;) {
        idx[d] = rest % output_.shape()[d];
        rest /= output_.shape()[d];
      }
      Scalar value = reference.value(node, idx);
      reference_.emplace_back(idx, value);
      double v = value.to_double();
      if (std::isfinite(v)) total += std::fabs(v);
    }
  } catch (const Error&) {
    reference_.clear();  // e.g. data-dependent indices the random inputs make invalid: compare with the seed only
  }
  reference_scale_ = reference_.empty() ? 1 : total / static_cast<double>(reference_.size());
}

Array& KernelRig::buffer(NodeId n) {
  auto it = inputs_.find(n);
  if (it != inputs_.end()) return it->second;
  const Node& node = graph_.node(n);
  Array a(node.dtype, concrete(node.shape, dims_));
  std::mt19937 rng(static_cast<unsigned>(n) * 7919u + 1);
  std::normal_distribution<double> normal(0.0, 0.5);
  if (is_float(node.dtype)) {
    for (int64_t i = 0; i < a.numel(); ++i) a.set(i, normal(rng));
  }  // integer and bool inputs stay 0: always a valid index
  fill_known(graph_, n, dims_, a);
  return inputs_.emplace(n, std::move(a)).first->second;
}

Candidate KernelRig::make(const std::vector<kernel::Action>& actions, const std::string& name) {
  Candidate c;
  c.actions = actions;
  c.name = name;
  try {
    kernel::Schedule s = kernel::Schedule::from_actions(graph_.node(node_).shape, actions);
    kernel::LowerOptions options;
    options.split_loops = true;  // as the program will run it
    c.lowered = kernel::lower(graph_, node_, materialized_, s, name, options);
  } catch (const Error& e) {
    c.error = e.what();
  }
  return c;
}

void KernelRig::compile(std::vector<Candidate*> candidates, double* seconds) {
  auto start = std::chrono::steady_clock::now();
  std::vector<Candidate*> valid;
  for (Candidate* c : candidates) {
    if (c->error.empty()) valid.push_back(c);
  }
  auto keeps = [&](const Candidate& c, size_t pre) {  // as lumen/compiler/lower_stage.cpp keeps packs
    const kernel::ScratchBuffer& sb = c.lowered.scratch.at(static_cast<size_t>(-1 - c.lowered.pre_buffer_nodes[pre][0]));
    if (!sb.elements.is_const()) return false;
    int64_t read = 0;
    for (size_t b = 1; b < c.lowered.pre_buffer_nodes[pre].size(); ++b) {
      NodeId id = c.lowered.pre_buffer_nodes[pre][b];
      if (id < 0 || graph_.node(id).op != Op::Input || !graph_.node(id).parameter) return false;
      read += static_cast<int64_t>(buffer(id).nbytes());
    }
    return read > 0 && sb.elements.value() * static_cast<int64_t>(dtype_size(sb.dtype)) <= read;
  };
  for (Candidate* c : valid) {
    for (size_t i = 0; i < c->lowered.pre_kernels.size(); ++i) c->once.push_back(keeps(*c, i));
    c->once.push_back(false);
    c->done.assign(c->once.size(), false);
  }
  auto build = [this](std::vector<Candidate*> group) {
    std::vector<kernel::Kernel> kernels;
    for (Candidate* c : group) {
      for (const kernel::Kernel& k : c->lowered.pre_kernels) kernels.push_back(k);
      kernels.push_back(c->lowered.kernel);
    }
    std::shared_ptr<backend::Module> module = backend_->compile(backend_->render(kernels, 1), nullptr);
    for (Candidate* c : group) {
      c->module = module;
      std::vector<const kernel::Kernel*> launches;
      for (const kernel::Kernel& k : c->lowered.pre_kernels) launches.push_back(&k);
      launches.push_back(&c->lowered.kernel);
      for (size_t i = 0; i < launches.size(); ++i) {
        c->entries.push_back(backend_->load(*module, launches[i]->name));
        c->buffers.push_back(i + 1 < launches.size() ? c->lowered.pre_buffer_nodes[i] : c->lowered.buffer_nodes);
      }
    }
  };
  size_t parts = std::max<size_t>(1, std::min<size_t>(valid.size(), std::thread::hardware_concurrency()));
  std::vector<std::vector<Candidate*>> groups(parts);
  for (size_t i = 0; i < valid.size(); ++i) groups[i % parts].push_back(valid[i]);
  std::vector<std::future<void>> jobs;
  for (auto& group : groups) {
    if (!group.empty()) jobs.push_back(std::async(std::launch::async, build, group));
  }
  for (size_t g = 0; g < jobs.size(); ++g) {
    try {
      jobs[g].get();
    } catch (const Error&) {
      for (Candidate* c : groups[g]) {  // isolate the candidate that does not compile
        try {
          build({c});
        } catch (const Error& e) {
          c->error = std::string("compile failed: ") + std::string(e.what()).substr(0, 300);
        }
      }
    }
  }
  if (seconds) *seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

namespace {
// Parameters (weights) larger than this are read cold, as a program reads a
// layer's weights once per run; smaller ones, and other inputs (activations
// the previous kernel just wrote), stay hot...
constexpr int64_t kHotParameterBytes = int64_t{1} << 20;
// ... unless they are too big for the caches to keep between runs anyway.
constexpr int64_t kHotInputBytes = int64_t{32} << 20;
// Cold inputs rotate through copies adding up to this much (as make bench does).
constexpr double kColdBytes = 320e6;

bool read_cold(const Node& node, int64_t bytes, bool parameters_warm) {
  if (node.op != Op::Input) return false;
  if (node.parameter && parameters_warm) return false;
  return bytes > (node.parameter ? kHotParameterBytes : kHotInputBytes);
}
}  // namespace

void* KernelRig::run_data(NodeId n) {
  if (device_memory_) return buffer(n).data();  // a GPU's caches are not the host's: read them hot
  if (!read_cold(graph_.node(n), buffer(n).nbytes(), parameters_warm_)) return buffer(n).data();
  if (copy_count_ == 0) {  // enough copies of the large inputs to overflow the caches (this host's L3 holds ~100 MiB)
    double bytes = 0;
    for (const auto& [id, a] : inputs_) {
      if (read_cold(graph_.node(id), a.nbytes(), parameters_warm_)) bytes += static_cast<double>(a.nbytes());
    }
    copy_count_ = static_cast<int>(std::clamp(std::ceil(kColdBytes / std::max(bytes, 1.0)), 2.0, 64.0));
  }
  std::vector<std::shared_ptr<unsigned char>>& copies = copies_[n];
  if (copies.empty()) {
    // Memory like the program's: weights come from mapped model files (small
    // pages, where the hardware prefetcher stops every 4 KiB), activations
    // from lumen's or numpy's large buffers (huge pages).
    const Array& original = buffer(n);
    auto bytes = static_cast<size_t>(original.nbytes());
    for (int i = 0; i < copy_count_; ++i) {
      copies.push_back(allocate_host(bytes, false, !graph_.node(n).parameter));
      std::memcpy(copies.back().get(), original.data(), bytes);
    }
  }
  return copies[static_cast<size_t>(runs_ % static_cast<int64_t>(copies.size()))].get();
}

// Scratch refilled every run is shared by all candidates (one working set,
// as in a program); a pack done once belongs to its candidate.
void KernelRig::bind_scratch(Candidate& c) {
  bool own = std::find(c.once.begin(), c.once.end(), true) != c.once.end();
  for (size_t i = 0; i < c.lowered.scratch.size(); ++i) {
    const kernel::ScratchBuffer& sb = c.lowered.scratch[i];
    int64_t elements = evaluate(sb.elements, dims_);
    auto key = std::make_pair(own ? c.name : "shared " + std::string(dtype_name(sb.dtype)) + " " + std::to_string(elements),
                              static_cast<int>(i));
    auto it = scratch_.find(key);
    if (it == scratch_.end()) it = scratch_.emplace(key, Array(sb.dtype, {elements})).first;
    c.scratch_data.push_back(it->second.data());
  }
}

double KernelRig::run(Candidate& c) {
  if (c.scratch_data.size() != c.lowered.scratch.size()) bind_scratch(c);
  ++runs_;
  // Each launch's arguments are gathered before the clock starts: only the kernels are timed.
  std::vector<std::vector<void*>> args(c.entries.size());
  for (size_t l = 0; l < c.entries.size(); ++l) {
    for (NodeId b : c.buffers[l]) {
      if (b == node_) {
        args[l].push_back(output_.data());
      } else if (b >= 0) {
        args[l].push_back(run_data(b));
      } else {
        args[l].push_back(c.scratch_data.at(static_cast<size_t>(-1 - b)));
      }
    }
  }
  std::shared_ptr<backend::Queue> queue = device_memory_ ? backend_->device_queue() : backend_->queue();
  if (device_memory_) {
    for (size_t l = 0; l < c.entries.size(); ++l) {
      for (size_t i = 0; i < args[l].size(); ++i) args[l][i] = on_device(*queue, args[l][i], host_bytes(c.buffers[l][i], c));
    }
    backend_->finish(*queue);  // the copies up are done before the clock starts
  }
  auto start = std::chrono::steady_clock::now();
  backend::LaunchStatus status;
  for (size_t l = 0; l < c.entries.size() && !status.failed; ++l) {
    if (l < c.once.size() && c.once[l]) {
      if (c.done[l]) continue;
      c.done[l] = true;
    }
    status = backend_->launch(*queue, c.entries[l], args[l].data(), dim_values_.data());
  }
  if (device_memory_) status = backend_->finish(*queue);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (status.failed) fail("kernel reported index ", status.value, " out of range [0, ", status.bound, ")");
  if (device_memory_) {  // the output back for verify(), outside the clock
    backend_->copy_to_host(*queue, output_.data(), device_.at(output_.data()).first, static_cast<size_t>(output_.nbytes()));
    backend_->finish(*queue);
  }
  return ms;
}

size_t KernelRig::host_bytes(NodeId b, const Candidate& c) const {
  if (b == node_) return static_cast<size_t>(output_.nbytes());
  if (b >= 0) return static_cast<size_t>(inputs_.at(b).nbytes());
  const kernel::ScratchBuffer& sb = c.lowered.scratch.at(static_cast<size_t>(-1 - b));
  return static_cast<size_t>(evaluate(sb.elements, dims_)) * dtype_size(sb.dtype);
}

void* KernelRig::on_device(backend::Queue& queue, void* host, size_t bytes) {
  auto it = device_.find(host);
  if (it != device_.end() && it->second.second >= bytes) return it->second.first;
  if (it != device_.end()) backend_->device_free(it->second.first);
  void* d = backend_->device_alloc(std::max<size_t>(bytes, 1));
  backend_->copy_to_device(queue, d, host, bytes);
  device_[host] = {d, bytes};
  return d;
}

KernelRig::~KernelRig() {
  for (auto& [host, twin] : device_) backend_->device_free(twin.first);
}

std::optional<std::string> KernelRig::verify(const Candidate& c, const Array* seed_output) {
  (void)c;
  for (const auto& [idx, want] : reference_) {
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d) flat = flat * output_.shape()[d] + idx[d];
    Scalar got = output_.load(flat);
    if (!agree(got, want, reference_scale_)) {
      std::ostringstream why;
      why << "element " << flat << " is " << got.to_double() << ", the reference evaluator gives " << want.to_double();
      return why.str();
    }
  }
  if (seed_output) {
    for (int64_t i = 0; i < output_.numel(); ++i) {
      if (!agree(output_.load(i), seed_output->load(i), reference_scale_)) {
        std::ostringstream why;
        why << "element " << i << " is " << output_.get(i) << ", the heuristic schedule gives " << seed_output->get(i);
        return why.str();
      }
    }
  }
  return std::nullopt;
}

}  // namespace lumen::search
