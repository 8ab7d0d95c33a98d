// Programs run from several threads: two different programs at once must each
// give exactly their single-threaded outputs (they share the global thread
// pool), and one program shared by threads stays intact: each thread's
// set/run/get sequence under Program::lock() sees its own inputs.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "lumen/backend/cpu/thread_pool.h"
#include "lumen/compile.h"
#include "lumen/core/tensor.h"
#include "lumen/ops/reduce.h"

namespace lumen {
namespace {

CompileOptions cpu_options() {
  CompileOptions o;
  o.backend = Backend::Cpu;
  o.tuning_cache = false;
  return o;
}

// Big enough that its kernels run in parallel on the pool.
Program softmax_matmul(Graph& g, int64_t n) {
  Tensor a = g.input("a", {Expr(n), Expr(n)}), b = g.input("b", {Expr(n), Expr(n)});
  Tensor y = ops::softmax(a.matmul(b), -1);
  return compile(g, {y}, cpu_options());
}

Program scaled_rows(Graph& g, int64_t n) {
  Tensor a = g.input("a", {Expr(n), Expr(n)}), b = g.input("b", {Expr(n), Expr(n)});
  Tensor y = (a * b + a.exp()).sum(1);
  return compile(g, {y}, cpu_options());
}

Array random_array(int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (float& x : v) x = u(rng);
  return Array::from_floats(v, {rows, cols});
}

std::vector<float> run_once(Program& p, const Array& a, const Array& b) {
  auto held = p.lock();
  p.set("a", a);
  p.set("b", b);
  p.run();
  return p.get(p.output_names()[0]).to_floats();
}

// 4 threads x 2 programs x 1,000 runs: every output bit-exact.
TEST(Concurrency, TwoProgramsFromFourThreadsAreExact) {
  ASSERT_GE(cpu::ThreadPool::global()->size(), 2) << "needs a pool of at least two threads to overlap runs";
  Graph g1, g2;
  const int64_t n = 160;
  Program p1 = softmax_matmul(g1, n), p2 = scaled_rows(g2, n);
  // Each thread owns its inputs; the reference is computed single-threaded first.
  struct Case {
    Array a, b;
    std::vector<float> want1, want2;
  };
  std::vector<Case> cases;
  for (unsigned t = 0; t < 4; ++t) {
    Case c{random_array(n, n, 10 + t), random_array(n, n, 20 + t), {}, {}};
    c.want1 = run_once(p1, c.a, c.b);
    c.want2 = run_once(p2, c.a, c.b);
    cases.push_back(c);
  }
  // Each thread runs its own copy of the two programs (different programs at once).
  std::vector<std::unique_ptr<Graph>> graphs;
  std::vector<Program> own1, own2;
  for (int t = 0; t < 4; ++t) {
    graphs.push_back(std::make_unique<Graph>());
    own1.push_back(softmax_matmul(*graphs.back(), n));
    graphs.push_back(std::make_unique<Graph>());
    own2.push_back(scaled_rows(*graphs.back(), n));
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const Case& c = cases[t];
      for (int i = 0; i < 1000; ++i) {
        if (run_once(own1[t], c.a, c.b) != c.want1) wrong++;
        if (run_once(own2[t], c.a, c.b) != c.want2) wrong++;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0) << "runs whose outputs differed from the single-threaded ones";
}

// One program shared by 4 threads, each with its own inputs, 500 runs each.
TEST(Concurrency, OneProgramSharedByFourThreads) {
  Graph g;
  const int64_t n = 48;
  Program p = softmax_matmul(g, n);
  std::vector<Array> as, bs;
  std::vector<std::vector<float>> want;
  for (unsigned t = 0; t < 4; ++t) {
    as.push_back(random_array(n, n, 30 + t));
    bs.push_back(random_array(n, n, 40 + t));
    want.push_back(run_once(p, as.back(), bs.back()));
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        if (run_once(p, as[t], bs[t]) != want[t]) wrong++;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

// The pool may be replaced while programs run on it (set_threads from another thread).
TEST(Concurrency, ReplacingThePoolWhileRunning) {
  Graph g;
  Program p = softmax_matmul(g, 64);
  Array a = random_array(64, 64, 1), b = random_array(64, 64, 2);
  std::vector<float> want = run_once(p, a, b);
  int before = cpu::ThreadPool::global()->size();
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::thread runner([&] {
    for (int i = 0; i < 300; ++i) {
      if (run_once(p, a, b) != want) wrong++;
    }
    done = true;
  });
  for (int i = 0; !done; ++i) cpu::ThreadPool::set_global_threads(i % 2 ? before : 1);
  runner.join();
  cpu::ThreadPool::set_global_threads(before);
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace lumen
