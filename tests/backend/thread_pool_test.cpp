// The thread pool's lock-free dispatch: every task index runs exactly once per
// run, whether the workers are spinning (back-to-back runs) or asleep (a pause
// between runs), and a pool is destroyed cleanly in either state.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "lumen/backend/cpu/thread_pool.h"

namespace lumen::cpu {
namespace {

struct Counts {
  std::vector<std::atomic<int>> hits;
  explicit Counts(size_t n) : hits(n) {}
};

void count(void* context, int64_t begin, int64_t end) {
  auto* c = static_cast<Counts*>(context);
  for (int64_t i = begin; i < end; ++i) c->hits[static_cast<size_t>(i)].fetch_add(1);
}

void expect_each_once(ThreadPool& pool, int64_t tasks) {
  Counts c(static_cast<size_t>(tasks));
  pool.run(tasks, count, &c);
  for (int64_t i = 0; i < tasks; ++i) ASSERT_EQ(c.hits[static_cast<size_t>(i)].load(), 1) << "task " << i << " of " << tasks;
}

TEST(ThreadPool, BackToBackRunsCoverEveryTaskOnce) {
  ThreadPool pool(3);
  for (int r = 0; r < 20000; ++r) expect_each_once(pool, 1 + r % 7);
}

// The workers fall asleep between these runs: a lost wake-up would hang here.
TEST(ThreadPool, RunsAfterTheWorkersSleptCoverEveryTaskOnce) {
  ThreadPool pool(2);
  for (int r = 0; r < 200; ++r) {
    expect_each_once(pool, 5);
    if (r % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(r % 2 ? 200 : 2000));
  }
}

TEST(ThreadPool, DestroyedWhileSpinningOrSleeping) {
  for (int r = 0; r < 50; ++r) {
    ThreadPool pool(2);
    expect_each_once(pool, 4);
    if (r % 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace
}  // namespace lumen::cpu
