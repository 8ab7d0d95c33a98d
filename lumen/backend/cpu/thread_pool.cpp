#include "lumen/backend/cpu/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>

namespace lumen::cpu {

namespace {

void chunk(int64_t tasks, int parts, int index, int64_t* begin, int64_t* end) {
  int64_t base = tasks / parts, extra = tasks % parts;
  *begin = index * base + std::min<int64_t>(index, extra);
  *end = *begin + base + (index < extra ? 1 : 0);
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(threads, 1); ++i) workers_.emplace_back([this, i] { work(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    generation_++;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

namespace {
std::mutex global_mutex;

// Guarded by global_mutex. Never destroyed: workers may still spin at exit.
std::shared_ptr<ThreadPool>& global_pool() {
  static auto* pool = [] {
    int n = static_cast<int>(std::thread::hardware_concurrency());
    if (const char* env = std::getenv("LUMEN_THREADS")) n = std::atoi(env);
    return new std::shared_ptr<ThreadPool>(std::make_shared<ThreadPool>(std::max(n, 1)));
  }();
  return *pool;
}
}  // namespace

std::shared_ptr<ThreadPool> ThreadPool::global() {
  std::lock_guard<std::mutex> lock(global_mutex);
  return global_pool();
}

void ThreadPool::set_global_threads(int threads) {
  std::lock_guard<std::mutex> lock(global_mutex);
  std::shared_ptr<ThreadPool>& pool = global_pool();
  if (pool->size() == std::max(threads, 1)) return;
  // Runs in flight keep the old pool alive through their own reference.
  pool = std::make_shared<ThreadPool>(std::max(threads, 1));
}

void ThreadPool::run(int64_t tasks, Task task, void* context) {
  if (tasks <= 0) return;
  int parts = static_cast<int>(std::min<int64_t>(tasks, size()));
  std::unique_lock<std::mutex> owner(run_mutex_, std::defer_lock);
  if (parts == 1 || !owner.try_lock()) {  // one part, or the workers are busy with another caller's run
    task(context, 0, tasks);
    return;
  }
  // Every worker acknowledges the run, those without a part too: the fields
  // below stay untouched until all have read them.
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  tasks_ = tasks;
  task_ = task;
  context_ = context;
  active_ = parts;
  generation_.fetch_add(1, std::memory_order_seq_cst);  // publishes the fields
  // A worker counts itself a sleeper before it checks the generation under the
  // mutex: either it sees this run there or we see it here and wake it.
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  int64_t begin, end;
  chunk(tasks, parts, 0, &begin, &end);
  task(context, begin, end);
  // On a machine busier than its cores a worker may be descheduled: give the
  // core up now and then instead of spinning through its time slice.
  for (int spin = 1; pending_.load(std::memory_order_acquire) > 0; ++spin) {
    if (spin % 256 == 0) std::this_thread::yield();
    _mm_pause();
  }
}

void ThreadPool::work(int index) {
  uint64_t seen = 0;
  while (true) {
    // Spin a little for the next run, then sleep.
    // ~30 µs: enough for back-to-back kernels, short enough not to steal the core from other work.
    for (int spin = 0; spin < 2000 && generation_.load(std::memory_order_acquire) == seen && !stop_; ++spin) _mm_pause();
    if (generation_.load(std::memory_order_acquire) == seen && !stop_) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_seq_cst) != seen || stop_; });
      }
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (stop_) return;
    seen = generation_.load(std::memory_order_acquire);
    if (index < active_) {
      int64_t begin, end;
      chunk(tasks_, active_, index, &begin, &end);
      task_(context_, begin, end);
    }
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace lumen::cpu
