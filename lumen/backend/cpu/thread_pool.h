// A persistent pool of worker threads for parallel loops. run() splits
// [0, tasks) into one contiguous part per thread; the caller takes part 0 and
// returns when every task is done. Each thread runs its own part in blocks
// taken from the front, then takes blocks from the backs of the parts not yet
// done. Where the threads keep pace each runs its own part (consecutive
// kernels find their rows in the same core's cache); where one is slowed — a
// shared machine gives its core to another process, or it is still waking up
// — the others run its blocks instead of waiting for it. Threads spin briefly
// before sleeping so back-to-back kernels do not pay a wake-up each.
//
// A run is published without a lock: the task fields, then the parts' ranges
// (release), then the generation. A thread reads the task fields only after
// it has claimed a block, and a run cannot end while a claimed block is not
// done, so the fields it reads are those of the run it works for; the caller
// never waits for a worker that has nothing to do (one descheduled, or not yet
// awake). The mutex and condition variable are touched only when a worker has
// gone to sleep.
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
  // One published run of tasks [base, base + tasks), tasks < 2^32.
  void run_part(int64_t base, int64_t tasks, int parts);
  void work(int index);
  // Runs the blocks of part `index`, then blocks taken from the other parts' backs.
  void drain(int index);
  // Runs blocks taken from the back of part `victim`; its last block only
  // after `patience` cycles without its thread taking it.
  int64_t steal(int victim, int64_t block, uint64_t patience);
  // Claims up to `block` tasks from the front (or back) of `range` if it still
  // holds `seen`, runs them and returns how many; `seen` is the range after.
  int64_t run_block(std::atomic<uint64_t>& range, uint64_t& seen, int64_t block, bool from_back);

  // A part's tasks not yet taken, [front, back), packed as front << 32 | back
  // so that a block is claimed from either end by one compare-and-swap.
  struct alignas(64) Part {
    std::atomic<uint64_t> range{0};
  };

  std::mutex run_mutex_;  // held by the caller whose tasks the workers run
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  alignas(64) std::atomic<uint64_t> generation_{0};  // read by spinning workers: a line of its own
  std::atomic<int> sleepers_{0};  // workers blocked (or about to block) on wake_
  std::atomic<bool> stop_{false};
  // Written by the run's caller before the ranges are published; read by a
  // thread after it claims a block of the run.
  Task task_ = nullptr;
  void* context_ = nullptr;
  int64_t base_ = 0;
  // Read before a claim (a stale value only changes how blocks are cut or when the last is taken).
  std::atomic<int64_t> tasks_{0};  // in the current run
  std::atomic<int> active_{0};     // parts in the current run
  std::atomic<int64_t> block_{1};  // tasks claimed at a time
  alignas(64) std::atomic<int64_t> done_{0};  // tasks of the current run finished
  std::unique_ptr<Part[]> parts_;  // one per thread
};

}  // namespace lumen::cpu
