// The thread pool's lock-free dispatch: every task index runs exactly once per
// run, whether the workers are spinning (back-to-back runs) or asleep (a pause
// between runs), the others take a slowed thread's blocks, and a pool is
// destroyed cleanly in either state.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
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

// Many blocks per part, runs of odd sizes: each task once, whether a part's
// blocks were taken from its front or stolen from its back.
TEST(ThreadPool, BlocksClaimedFromBothEndsCoverEveryTaskOnce) {
  ThreadPool pool(3);
  for (int r = 0; r < 3000; ++r) expect_each_once(pool, 1 + (r * 37) % 1000);
}

struct Tracked {
  std::mutex mutex;
  std::thread::id caller = std::this_thread::get_id();
  std::vector<std::thread::id> ran;
  bool slowed = false;
  explicit Tracked(size_t n) : ran(n) {}
};

// The first block a worker runs stalls (its core taken away); the caller runs
// the rest of that worker's part instead of waiting for it.
void stall_a_worker(void* context, int64_t begin, int64_t end) {
  auto* t = static_cast<Tracked*>(context);
  bool stall = false;
  {
    std::lock_guard<std::mutex> lock(t->mutex);
    for (int64_t i = begin; i < end; ++i) t->ran[static_cast<size_t>(i)] = std::this_thread::get_id();
    if (std::this_thread::get_id() != t->caller && !t->slowed) stall = t->slowed = true;
  }
  if (stall) std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

TEST(ThreadPool, TheCallerTakesTheBlocksOfAStalledWorker) {
  ThreadPool pool(2);
  Tracked t(64);
  pool.run(64, stall_a_worker, &t);
  int by_caller = 0;
  for (std::thread::id id : t.ran) by_caller += id == t.caller;
  // The worker's part is 32 tasks in blocks of 4; it stalls in its first block
  // (if it woke at all before the caller was done): the caller runs at least 60.
  EXPECT_GE(by_caller, 60);
}

}  // namespace
}  // namespace lumen::cpu
