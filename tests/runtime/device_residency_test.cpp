// The runtime on a backend with its own memory (Capabilities::device_memory),
// without a GPU: a stand-in backend runs the CPU backend's kernels on its own
// "device" allocations and counts the copies. Outputs and states agree with
// the interpreter across runs, inputs are copied up only when set again,
// nothing reads host memory where the device copy is meant, and a gather
// index out of range is still an Error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>

#include "lumen/backend/cpu/cpu_backend.h"
#include "lumen/compile.h"
#include "lumen/compiler/compiler.h"
#include "lumen/ops/linalg.h"
#include "lumen/runtime/compiled_executor.h"
#include "tests/runtime/gather_range_check.h"

namespace lumen {
namespace {

// A queue of the stand-in device: the CPU's, and whether launches on it take device pointers.
struct FakeQueue : backend::Queue {
  std::shared_ptr<backend::Queue> cpu;
  bool device = false;
};

// The CPU backend's kernels on memory only this backend hands out: launches
// check that every buffer pointer lies in one of its allocations.
class FakeDevice : public backend::Backend {
 public:
  const char* name() const override { return cpu_->name(); }
  backend::Capabilities capabilities() const override {
    backend::Capabilities c = cpu_->capabilities();
    c.device_memory = true;
    return c;
  }
  std::string fingerprint() const override { return cpu_->fingerprint(); }
  std::string kernel_name(const kernel::Kernel& k) const override { return cpu_->kernel_name(k); }
  std::vector<std::string> render(const std::vector<kernel::Kernel>& k, int units) const override {
    return cpu_->render(k, units);
  }
  std::shared_ptr<backend::Module> compile(const std::vector<std::string>& s, backend::CompileInfo* i) const override {
    return cpu_->compile(s, i);
  }
  backend::Entry load(const backend::Module& m, const std::string& n) const override { return cpu_->load(m, n); }
  int64_t tasks(const backend::Entry& e, const int64_t* dims) const override { return cpu_->tasks(e, dims); }
  std::shared_ptr<backend::Queue> queue() const override { return make_queue(false); }
  backend::LaunchStatus launch(backend::Queue& q, const backend::Entry& e, void* const* buffers,
                               const int64_t* dims) const override {
    auto& fq = static_cast<FakeQueue&>(q);
    if (!fq.device) ++plain_launches_;
    if (buffers[0] && !on_device(buffers[0])) ++host_pointers_;  // every kernel's first buffer is its output
    backend::LaunchStatus s = cpu_->launch(*fq.cpu, e, buffers, dims);
    if (s.failed && !pending_.failed) pending_ = s;
    return {};
  }
  void* device_alloc(size_t bytes) const override {
    void* p = std::calloc(bytes + 64, 1);
    blocks_[p] = bytes + 64;
    return p;
  }
  void device_free(void* p) const override {
    blocks_.erase(p);
    std::free(p);
  }
  void copy_to_device(backend::Queue&, void* device, const void* host, size_t bytes) const override {
    EXPECT_TRUE(on_device(device));
    std::memcpy(device, host, bytes);
    up_ += bytes;
  }
  void copy_to_host(backend::Queue&, void* host, const void* device, size_t bytes) const override {
    EXPECT_TRUE(on_device(device));
    std::memcpy(host, device, bytes);
    down_ += bytes;
  }
  std::shared_ptr<backend::Queue> device_queue() const override { return make_queue(true); }
  backend::LaunchStatus finish(backend::Queue&) const override {
    backend::LaunchStatus s = pending_;
    pending_ = {};
    return s;
  }

  bool on_device(const void* p) const {
    auto c = reinterpret_cast<uintptr_t>(p);
    for (const auto& [base, bytes] : blocks_) {
      auto b = reinterpret_cast<uintptr_t>(base);
      if (c >= b && c < b + bytes) return true;
    }
    return false;
  }

  mutable size_t up_ = 0, down_ = 0;
  mutable int host_pointers_ = 0, plain_launches_ = 0;

 private:
  std::shared_ptr<backend::Queue> make_queue(bool device) const {
    auto q = std::make_shared<FakeQueue>();
    q->cpu = cpu_->queue();
    q->device = device;
    return q;
  }
  std::shared_ptr<const backend::Backend> cpu_ = cpu::CpuBackend::shared();
  mutable std::map<void*, size_t> blocks_;
  mutable backend::LaunchStatus pending_;
};

Program on(const Graph& g, const std::shared_ptr<FakeDevice>& device) {
  compiler::CompilerOptions o;
  o.search.use_cache = false;
  std::vector<Edge> outs;
  for (const NamedOutput& n : g.outputs()) outs.push_back(n.edge);
  auto shared = std::make_shared<const Graph>(g);
  return Program(shared, g.outputs(), std::make_unique<CompiledExecutor>(compiler::compile(g, outs, o, device).program));
}

TEST(DeviceResidency, InputsCrossOnceOutputsEveryRunAndResultsAgree) {
  Graph g;
  Tensor x = g.input("x", {Expr(8), Expr(16)}), w = g.input("w", {Expr(16), Expr(4)});
  g.mark_output(ops::matmul(x, w).exp(), "y");
  auto device = std::make_shared<FakeDevice>();
  Program p = on(g, device);
  Program ref = compile(g, {}, {Backend::Interp});
  std::vector<float> xs(128), ws(64);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 7) * 0.05f;
  for (size_t i = 0; i < ws.size(); ++i) ws[i] = static_cast<float>(i % 5) * 0.1f - 0.2f;
  for (Program* q : {&p, &ref}) {
    q->set("x", Array::from_floats(xs, {8, 16}));
    q->set("w", Array::from_floats(ws, {16, 4}));
  }
  p.run();
  ref.run();
  for (int64_t i = 0; i < 32; ++i) EXPECT_NEAR(p.get("y").get(i), ref.get("y").get(i), 1e-5);
  EXPECT_EQ(device->up_, (128 + 64) * 4u);
  EXPECT_EQ(device->down_, 32 * 4u);
  EXPECT_EQ(device->host_pointers_, 0);
  EXPECT_EQ(device->plain_launches_, 0);

  p.run();  // nothing set again: only the output comes down
  EXPECT_EQ(device->up_, (128 + 64) * 4u);
  EXPECT_EQ(device->down_, 2 * 32 * 4u);

  xs[3] = 2.0f;  // x set again: x crosses, w stays
  for (Program* q : {&p, &ref}) q->set("x", Array::from_floats(xs, {8, 16}));
  p.run();
  ref.run();
  EXPECT_EQ(device->up_, (2 * 128 + 64) * 4u);
  for (int64_t i = 0; i < 32; ++i) EXPECT_NEAR(p.get("y").get(i), ref.get("y").get(i), 1e-5);
}

// A KV-cache-like state appended to across runs, shared with a second program.
TEST(DeviceResidency, StatesRoundTripEveryRunAndStayShared) {
  Graph g;
  Expr past = g.dim("past");
  Tensor cache = g.state("cache", {Expr(6), Expr(2)});
  Tensor x = g.input("x", {Expr(1), Expr(2)});
  g.assign(cache.slice(0, past, past + 1), x * x.scalar(3));
  g.mark_output(cache.sum(0), "sum");  // the state from before the write
  auto device = std::make_shared<FakeDevice>();
  Program p = on(g, device);
  Program reader = on(g, device);
  reader.share_state(p);
  std::vector<float> want(12, 0);
  for (int64_t step = 0; step < 4; ++step) {
    p.set("x", Array::from_floats({static_cast<float>(step + 1), 10.0f}, {1, 2}));
    p.bind("past", step);
    p.run();
    want[static_cast<size_t>(step * 2)] = 3.0f * static_cast<float>(step + 1);
    want[static_cast<size_t>(step * 2 + 1)] = 30.0f;
    EXPECT_EQ(p.state("cache").to_floats(), want) << "step " << step;
  }
  // The other program sees the state the first one wrote (through the host copy).
  reader.set("x", Array::from_floats({0.0f, 0.0f}, {1, 2}));
  reader.bind("past", 5);
  reader.run();
  EXPECT_FLOAT_EQ(reader.get("sum").get(0), 3.0f * (1 + 2 + 3 + 4));
  EXPECT_FLOAT_EQ(reader.get("sum").get(1), 120.0f);
  EXPECT_EQ(device->host_pointers_, 0);
}

// The schedule search on such a backend: candidates run on device copies of
// the rig's buffers (no host pointer reaches a launch), are verified from the
// output copied back, and the searched program agrees with the interpreter.
TEST(DeviceResidency, TheScheduleSearchTimesKernelsOnDeviceMemory) {
  Graph g;
  Tensor x = g.input("x", {Expr(48), Expr(64)}), w = g.input("w", {Expr(64), Expr(32)});
  g.mark_output(ops::matmul(x, w), "y");
  auto device = std::make_shared<FakeDevice>();
  compiler::CompilerOptions o;
  o.search.use_cache = false;
  o.search.budget_s = 1.5;
  std::vector<Edge> outs = {g.outputs()[0].edge};
  compiler::CompileResult r = compiler::compile(g, outs, o, device);
  EXPECT_GT(r.program.stats["search_timing_runs"], 0) << r.program.report;
  auto shared = std::make_shared<const Graph>(g);
  Program p(shared, g.outputs(), std::make_unique<CompiledExecutor>(std::move(r.program)));
  Program ref = compile(g, {}, {Backend::Interp});
  std::vector<float> xs(48 * 64), ws(64 * 32);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 11) * 0.1f - 0.5f;
  for (size_t i = 0; i < ws.size(); ++i) ws[i] = static_cast<float>(i % 7) * 0.05f;
  for (Program* q : {&p, &ref}) {
    q->set("x", Array::from_floats(xs, {48, 64}));
    q->set("w", Array::from_floats(ws, {64, 32}));
    q->run();
  }
  for (int64_t i = 0; i < 48 * 32; ++i) EXPECT_NEAR(p.get("y").get(i), ref.get("y").get(i), 1e-4);
  EXPECT_EQ(device->host_pointers_, 0);
  EXPECT_EQ(device->plain_launches_, 0);  // the search's runs too
}

TEST(DeviceResidency, GatherOutOfRangeIsStillAnError) {
  auto device = std::make_shared<FakeDevice>();
  expect_gather_range_error([&](const Graph& g) { return on(g, device); });
}

}  // namespace
}  // namespace lumen
