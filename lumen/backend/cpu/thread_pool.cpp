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

// Each part is claimed in about this many blocks.
constexpr int64_t kBlocksPerPart = 8;

uint64_t pack_range(int64_t front, int64_t back) {
  return static_cast<uint64_t>(front) << 32 | static_cast<uint64_t>(back);
}

int64_t front_of(uint64_t range) { return static_cast<int64_t>(range >> 32); }
int64_t back_of(uint64_t range) { return static_cast<int64_t>(range & 0xffffffffu); }

// Claims up to `block` tasks from the front (or the back) of a part's range,
// if the range still holds `seen`; on failure `seen` is the range now.
bool claim(std::atomic<uint64_t>& range, uint64_t& seen, int64_t block, bool from_back, int64_t* begin, int64_t* end) {
  int64_t front = front_of(seen), back = back_of(seen);
  if (front >= back) return false;
  int64_t n = std::min(block, back - front);
  uint64_t next = from_back ? pack_range(front, back - n) : pack_range(front + n, back);
  if (!range.compare_exchange_strong(seen, next, std::memory_order_acq_rel, std::memory_order_acquire)) return false;
  *begin = from_back ? back - n : front;
  *end = from_back ? back : front + n;
  return true;
}

}  // namespace

ThreadPool::ThreadPool(int threads) : parts_(new Part[static_cast<size_t>(std::max(threads, 1))]) {
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
  task_ = task;
  context_ = context;
  // A part's range is packed in 32 bits: more tasks run as several runs.
  constexpr int64_t kMaxRun = int64_t{1} << 31;
  for (int64_t base = 0; base < tasks; base += kMaxRun) run_part(base, std::min(kMaxRun, tasks - base), parts);
}

void ThreadPool::run_part(int64_t base, int64_t tasks, int parts) {
  base_ = base;
  tasks_.store(tasks, std::memory_order_relaxed);
  active_.store(parts, std::memory_order_relaxed);
  block_.store(std::max<int64_t>(1, tasks / parts / kBlocksPerPart), std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  for (int i = 0; i < parts; ++i) {
    int64_t begin, end;
    chunk(tasks, parts, i, &begin, &end);
    parts_[i].range.store(pack_range(begin, end), std::memory_order_release);
  }
  generation_.fetch_add(1, std::memory_order_seq_cst);
  // A worker counts itself a sleeper before it checks the generation under the
  // mutex: either it sees this run there or we see it here and wake it.
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  drain(0);
  // Only a block another thread has claimed and not finished is waited for. On
  // a machine busier than its cores that thread may be descheduled: give the
  // core up now and then instead of spinning through its time slice.
  for (int spin = 1; done_.load(std::memory_order_acquire) < tasks; ++spin) {
    if (spin % 256 == 0) std::this_thread::yield();
    _mm_pause();
  }
}

int64_t ThreadPool::run_block(std::atomic<uint64_t>& range, uint64_t& seen, int64_t block, bool from_back) {
  int64_t begin, end;
  if (!claim(range, seen, block, from_back, &begin, &end)) return 0;
  task_(context_, base_ + begin, base_ + end);
  seen = range.load(std::memory_order_acquire);
  return end - begin;
}

void ThreadPool::drain(int index) {
  int active = active_.load(std::memory_order_relaxed);
  int64_t block = block_.load(std::memory_order_relaxed);
  uint64_t patience = 0;  // cycles: how long one of this thread's blocks took
  int64_t done = 0;
  if (index < active) {
    uint64_t start = __rdtsc();
    int64_t blocks = 0;
    std::atomic<uint64_t>& own = parts_[index].range;
    for (uint64_t seen = own.load(std::memory_order_acquire); front_of(seen) < back_of(seen);) {
      int64_t ran = run_block(own, seen, block, false);
      done += ran;
      blocks += ran > 0;
    }
    if (blocks > 0) patience = (__rdtsc() - start) / static_cast<uint64_t>(blocks);
  }
  for (int k = 1; k <= active; ++k) {
    int victim = (index + k) % active;
    if (victim != index) done += steal(victim, block, patience);
  }
  // Counted once a drain: the line is shared, a count per block would bounce it between cores.
  if (done > 0) done_.fetch_add(done, std::memory_order_acq_rel);
}

int64_t ThreadPool::steal(int victim, int64_t block, uint64_t patience) {
  std::atomic<uint64_t>& range = parts_[victim].range;
  int64_t start, stop;
  chunk(tasks_.load(std::memory_order_relaxed), active_.load(std::memory_order_relaxed), victim, &start, &stop);
  int64_t done = 0;
  for (uint64_t seen = range.load(std::memory_order_acquire); front_of(seen) < back_of(seen);) {
    // The last block of a part its thread is working through is left to it
    // for as long as a block takes: taking it would only move its rows to
    // another core's cache. Past that its thread is taken to be stalled.
    if (back_of(seen) - front_of(seen) <= block && front_of(seen) != start) {
      uint64_t since = __rdtsc();
      uint64_t now = seen;
      while (now == seen && __rdtsc() - since < patience) {
        _mm_pause();
        now = range.load(std::memory_order_acquire);
      }
      if (now != seen) {
        seen = now;
        continue;
      }
    }
    done += run_block(range, seen, block, true);
  }
  return done;
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
    drain(index);
  }
}

}  // namespace lumen::cpu
