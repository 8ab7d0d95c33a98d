// A persistent pool of worker threads for parallel loops. run() splits
// [0, tasks) into one contiguous chunk per thread; the caller runs a chunk
// too and returns when all are done. Threads spin briefly before sleeping so
// back-to-back kernels do not pay a wake-up each. A run is published without a
// lock (the task fields, then the generation); the mutex and condition
// variable are touched only when a worker has gone to sleep.
//
// Several threads may call run() at once (two programs run from two threads):
// one of them gets the workers, the others run their tasks on their own
// thread, so a caller never waits for another program's kernels and a run's
// shared task slot is never overwritten mid-run.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace lumen::cpu {

class ThreadPool {
 public:
  using Task = void (*)(void* context, int64_t begin, int64_t end);

  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // LUMEN_THREADS, else the hardware concurrency. Hold the pointer for the
  // length of a run: set_global_threads may replace the pool meanwhile.
  static std::shared_ptr<ThreadPool> global();
  // Replaces the global pool; runs in flight finish on the old one.
  static void set_global_threads(int threads);
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void run(int64_t tasks, Task task, void* context);

 private:
  void work(int index);

  std::mutex run_mutex_;  // held by the caller whose tasks the workers run
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};  // workers blocked (or about to block) on wake_
  std::atomic<bool> stop_{false};
  // Written by the run's owner before the generation is bumped; read by the
  // workers after they see it. Every worker acknowledges every run (pending_),
  // so the owner never rewrites them while a worker still reads them.
  int64_t tasks_ = 0;
  Task task_ = nullptr;
  void* context_ = nullptr;
  int active_ = 0;  // threads taking part in the current run
};

}  // namespace lumen::cpu
