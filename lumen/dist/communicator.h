// Communicator — collectives and point-to-point transfers between the ranks
// of a group, on an existing engine: MPI between CPU processes
// (mpi_communicator.h), NCCL between GPUs (nccl_communicator.h).
//
// Every operation is non-blocking: it returns a request, and the caller
// computes while it is in flight and waits on it when the result is needed.
// Buffers are host memory and must stay valid until the wait returns.
//
// Waits are bounded: a peer that died or hangs turns into a lumen::Error
// after timeout_s (LUMEN_DIST_TIMEOUT, seconds; default 120) naming the
// operation, instead of a process that waits forever. (While ranks build and
// compile a DistProgram the limit is LUMEN_DIST_STARTUP_TIMEOUT, default 1800.)
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "lumen/core/dtype.h"
#include "lumen/dist/sharding.h"

namespace lumen::dist {

class CommRequest {
 public:
  virtual ~CommRequest() = default;
  // True once complete (waits at most `seconds`); throws Error if the operation failed.
  virtual bool wait_for(double seconds) = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* engine() const = 0;  // "mpi", "nccl"

  // In place: every rank's `count` elements become the element-wise sum (max) over ranks.
  virtual std::unique_ptr<CommRequest> all_reduce(void* data, int64_t count, DType dtype, ReduceOp op) = 0;
  // `recv` holds size() * count elements: rank r's `count` at offset r * count.
  virtual std::unique_ptr<CommRequest> all_gather(const void* send, void* recv, int64_t count, DType dtype) = 0;
  // `send` holds size() * count elements; rank r receives the reduction of every rank's block r.
  virtual std::unique_ptr<CommRequest> reduce_scatter(const void* send, void* recv, int64_t count, DType dtype,
                                                      ReduceOp op) = 0;
  virtual std::unique_ptr<CommRequest> send(const void* data, int64_t bytes, int peer, int tag) = 0;
  virtual std::unique_ptr<CommRequest> recv(void* data, int64_t bytes, int peer, int tag) = 0;
  // Every rank's `bytes` become root's.
  virtual std::unique_ptr<CommRequest> broadcast(void* data, int64_t bytes, int root) = 0;
  // Ranks passing the same color form a new communicator, ordered by key (collective).
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  // Waits for `request`; throws an Error naming `what` after the timeout.
  void wait(CommRequest& request, const std::string& what) const;
  void barrier(const std::string& what);
  // Every rank's 64-bit value, in rank order (blocking).
  std::vector<uint64_t> all_gather_u64(uint64_t value, const std::string& what);

  double timeout_s = default_timeout_s();

 protected:
  // Called when a wait timed out, before the Error is thrown (MPI marks the job failed).
  virtual void on_timeout() const {}

 public:
  static double default_timeout_s();  // LUMEN_DIST_TIMEOUT, else 120
};

// The process's world: every rank mpirun started (MPI), initialised on first use.
// One rank without mpirun is a world of one.
Communicator& world();
// Ends every rank of the job after a fatal error (MPI_Abort); returns only without MPI.
void abort_job(int code);
// True when the process was started by mpirun with more than one rank.
bool launched_with_ranks();

}  // namespace lumen::dist
