#include "lumen/dist/mpi_communicator.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "lumen/core/error.h"

namespace lumen::dist {

namespace {

using Start = std::function<int(MPI_Request*)>;

struct Task {
  Start start;
  std::string what;
  MPI_Request request = MPI_REQUEST_NULL;
  enum State { Queued, Running, Done, Failed };
  std::atomic<int> state{Queued};
  std::string error;
};

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

// The thread that makes every MPI call of the process.
class Engine {
 public:
  static Engine& get() {
    static Engine* engine = new Engine();  // never destroyed: the atexit hook ends MPI
    return *engine;
  }

  std::shared_ptr<Task> submit(Start start, std::string what) {
    auto t = std::make_shared<Task>();
    t->start = std::move(start);
    t->what = std::move(what);
    {
      std::lock_guard<std::mutex> lock(m_);
      if (stopped_) fail("dist: MPI has been shut down; cannot start ", t->what);
      queue_.push_back(t);
    }
    work_.notify_one();
    return t;
  }

  bool wait(Task& t, double seconds) {
    std::unique_lock<std::mutex> lock(m_);
    bool finished = done_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return t.state >= Task::Done; });
    if (!finished) return false;
    if (t.state == Task::Failed) fail("dist: MPI failed in ", t.what, ": ", t.error);
    return true;
  }

  int rank() const { return rank_; }
  int size() const { return size_; }

  // The job is broken (a wait timed out): end it with MPI_Abort, not a Finalize that would hang.
  void mark_failed() {
    std::lock_guard<std::mutex> lock(m_);
    failed_ = true;
  }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (stopped_) return;
      stopped_ = true;
    }
    work_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

  void abort(int code) {
    {
      std::lock_guard<std::mutex> lock(m_);
      failed_ = true;
      abort_code_ = code;
    }
    shutdown();
    std::_Exit(code);
  }

 private:
  Engine() {
    thread_ = std::thread([this] { loop(); });
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [&] { return ready_; });
    if (!init_error_.empty()) fail("dist: MPI_Init failed: ", init_error_);
    std::atexit([] { Engine::get().shutdown(); });
  }

  void init() {
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    std::lock_guard<std::mutex> lock(m_);
    if (rc != MPI_SUCCESS) {
      init_error_ = "code " + std::to_string(rc);
    } else {
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
      MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
      MPI_Comm_size(MPI_COMM_WORLD, &size_);
    }
    ready_ = true;
    done_.notify_all();
  }

  void start(const std::shared_ptr<Task>& t) {
    int rc = t->start(&t->request);
    if (rc != MPI_SUCCESS) {
      finish(*t, mpi_error(rc));
    } else if (t->request == MPI_REQUEST_NULL) {
      finish(*t, "");
    } else {
      t->state = Task::Running;
      active_.push_back(t);
    }
  }

  void finish(Task& t, const std::string& error) {
    {
      std::lock_guard<std::mutex> lock(m_);
      t.error = error;
      t.state = error.empty() ? Task::Done : Task::Failed;
    }
    done_.notify_all();
  }

  // Tests every in-flight request once; true if any finished.
  bool poll() {
    bool any = false;
    for (auto it = active_.begin(); it != active_.end();) {
      int flag = 0;
      int rc = MPI_Test(&(*it)->request, &flag, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS || flag) {
        finish(**it, rc == MPI_SUCCESS ? "" : mpi_error(rc));
        it = active_.erase(it);
        any = true;
      } else {
        ++it;
      }
    }
    return any;
  }

  void loop() {
    init();
    if (!init_error_.empty()) return;
    int idle_polls = 0;
    auto stop_deadline = std::chrono::steady_clock::time_point::max();
    for (;;) {
      std::deque<std::shared_ptr<Task>> fresh;
      bool stopping = false;
      {
        std::unique_lock<std::mutex> lock(m_);
        if (active_.empty()) work_.wait(lock, [&] { return !queue_.empty() || stopped_; });
        fresh.swap(queue_);
        stopping = stopped_;
        if (stopping && stop_deadline == std::chrono::steady_clock::time_point::max()) {
          // In-flight operations get a grace period at exit (none after a failure).
          stop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(failed_ ? 0 : 10);
        }
      }
      for (const auto& t : fresh) start(t);
      if (stopping && (active_.empty() || std::chrono::steady_clock::now() > stop_deadline)) break;
      if (poll()) {
        idle_polls = 0;
      } else if (!active_.empty()) {  // back off gently: the caller's kernels need the cores
        if (++idle_polls < 200) {
          std::this_thread::yield();
        } else {
          std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
      }
    }
    bool failed;
    {
      std::lock_guard<std::mutex> lock(m_);
      failed = failed_ || !active_.empty();
    }
    if (failed) {
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, abort_code_);
    } else {
      MPI_Finalize();
    }
  }

  std::thread thread_;
  std::mutex m_;
  std::condition_variable work_, done_;
  std::deque<std::shared_ptr<Task>> queue_;
  std::vector<std::shared_ptr<Task>> active_;  // engine thread only
  bool ready_ = false, stopped_ = false, failed_ = false;
  int abort_code_ = 1;
  std::string init_error_;
  int rank_ = 0, size_ = 1;
};

class MpiRequest : public CommRequest {
 public:
  explicit MpiRequest(std::shared_ptr<Task> t) : task_(std::move(t)) {}
  bool wait_for(double seconds) override { return Engine::get().wait(*task_, seconds); }

 private:
  std::shared_ptr<Task> task_;
};

MPI_Datatype mpi_type(DType d, const char* op) {
  switch (d) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    case DType::I32: return MPI_INT32_T;
    case DType::I64: return MPI_INT64_T;
    default: break;
  }
  fail("dist: MPI ", op, " of ", dtype_name(d), " is not supported (f32, f64, i32, i64; cast first)");
}

int checked_count(int64_t count, const char* op) {
  if (count < 0 || count > INT_MAX) fail("dist: MPI ", op, " of ", count, " elements exceeds MPI's int count");
  return static_cast<int>(count);
}

MPI_Op mpi_op(ReduceOp op) { return op == ReduceOp::Sum ? MPI_SUM : MPI_MAX; }

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* engine() const override { return "mpi"; }

  std::unique_ptr<CommRequest> all_reduce(void* data, int64_t count, DType dtype, ReduceOp op) override {
    MPI_Datatype t = mpi_type(dtype, "all-reduce");
    int n = checked_count(count, "all-reduce");
    MPI_Comm c = comm_;
    return submit([=](MPI_Request* r) { return MPI_Iallreduce(MPI_IN_PLACE, data, n, t, mpi_op(op), c, r); }, "all-reduce");
  }

  std::unique_ptr<CommRequest> all_gather(const void* send, void* recv, int64_t count, DType dtype) override {
    int n = checked_count(count * static_cast<int64_t>(dtype_size(dtype)), "all-gather");
    MPI_Comm c = comm_;
    return submit([=](MPI_Request* r) { return MPI_Iallgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, c, r); }, "all-gather");
  }

  std::unique_ptr<CommRequest> reduce_scatter(const void* send, void* recv, int64_t count, DType dtype, ReduceOp op) override {
    MPI_Datatype t = mpi_type(dtype, "reduce-scatter");
    int n = checked_count(count, "reduce-scatter");
    MPI_Comm c = comm_;
    return submit([=](MPI_Request* r) { return MPI_Ireduce_scatter_block(send, recv, n, t, mpi_op(op), c, r); },
                  "reduce-scatter");
  }

  std::unique_ptr<CommRequest> send(const void* data, int64_t bytes, int peer, int tag) override {
    int n = checked_count(bytes, "send");
    MPI_Comm c = comm_;
    return submit([=](MPI_Request* r) { return MPI_Isend(data, n, MPI_BYTE, peer, tag, c, r); },
                  "send to rank " + std::to_string(peer));
  }

  std::unique_ptr<CommRequest> recv(void* data, int64_t bytes, int peer, int tag) override {
    int n = checked_count(bytes, "recv");
    MPI_Comm c = comm_;
    return submit([=](MPI_Request* r) { return MPI_Irecv(data, n, MPI_BYTE, peer, tag, c, r); },
                  "receive from rank " + std::to_string(peer));
  }

  std::unique_ptr<CommRequest> broadcast(void* data, int64_t bytes, int root) override {
    int n = checked_count(bytes, "broadcast");
    MPI_Comm c = comm_;
    return submit([=](MPI_Request* r) { return MPI_Ibcast(data, n, MPI_BYTE, root, c, r); }, "broadcast");
  }

  void on_timeout() const override { Engine::get().mark_failed(); }

  std::unique_ptr<Communicator> split(int color, int key) override {
    auto made = std::make_shared<MPI_Comm>(MPI_COMM_NULL);
    MPI_Comm c = comm_;
    MpiRequest r(Engine::get().submit(
        [=](MPI_Request*) {
          int rc = MPI_Comm_split(c, color, key, made.get());
          if (rc == MPI_SUCCESS) MPI_Comm_set_errhandler(*made, MPI_ERRORS_RETURN);
          return rc;
        },
        "communicator split"));
    wait(r, "a communicator split (every rank must join)");
    auto rank_size = std::make_shared<std::pair<int, int>>(0, 1);
    MpiRequest q(Engine::get().submit(
        [=](MPI_Request*) {
          MPI_Comm_rank(*made, &rank_size->first);
          return MPI_Comm_size(*made, &rank_size->second);
        },
        "communicator size"));
    wait(q, "a communicator's size");
    return std::make_unique<MpiCommunicator>(*made, rank_size->first, rank_size->second);
  }

 private:
  std::unique_ptr<CommRequest> submit(Start start, const std::string& what) {
    return std::make_unique<MpiRequest>(Engine::get().submit(std::move(start), what));
  }

  MPI_Comm comm_;
  int rank_, size_;
};

}  // namespace

Communicator& mpi_world() {
  static MpiCommunicator* w = [] {
    Engine& e = Engine::get();
    return new MpiCommunicator(MPI_COMM_WORLD, e.rank(), e.size());
  }();
  return *w;
}

Communicator& world() { return mpi_world(); }

double plain_mpi_allreduce_seconds(float* data, int64_t count, int repeats, bool nonblocking) {
  int n = checked_count(count, "all-reduce");
  auto seconds = std::make_shared<double>(0);
  MpiRequest r(Engine::get().submit(
      [=](MPI_Request*) {
        int rc = MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        for (int i = 0; i < repeats && rc == MPI_SUCCESS; ++i) {
          if (nonblocking) {
            MPI_Request q;
            rc = MPI_Iallreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q);
            if (rc == MPI_SUCCESS) rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
          } else {
            rc = MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
          }
        }
        *seconds = (MPI_Wtime() - start) / repeats;
        return rc;
      },
      "a plain MPI_Allreduce loop"));
  mpi_world().wait(r, "a plain MPI_Allreduce loop");
  return *seconds;
}

void abort_job(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  Engine::get().abort(code);
}

}  // namespace lumen::dist
