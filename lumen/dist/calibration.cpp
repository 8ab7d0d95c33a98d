#include "lumen/dist/calibration.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "lumen/core/error.h"
#include "lumen/core/stopwatch.h"

namespace lumen::dist {

namespace {

// Every rank takes rank 0's value.
void agree(Communicator& comm, double& v, const char* what) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  bits = comm.all_gather_u64(bits, what)[0];
  std::memcpy(&v, &bits, sizeof bits);
}

template <typename F>
double median_seconds(int repeats, F run) {
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    run();
    t.push_back(seconds_since(start));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Seconds per run of x [rows, k] times w [n, k]^T.
double time_matmul(int64_t rows, int64_t k, int64_t n, const CompileOptions& options) {
  Graph g;
  Tensor x = g.input("x", {Expr(rows), Expr(k)});
  Tensor w = g.parameter("w", {Expr(n), Expr(k)});
  Program p = compile(g, {x.matmul(w.transpose(0, 1))}, options);
  p.set("x", Array(DType::F32, {rows, k}));
  p.set("w", Array(DType::F32, {n, k}));
  p.run();  // warm-up
  return median_seconds(5, [&] { p.run(); });
}

}  // namespace

void measure_compute(MachineModel& m, const CompileOptions& options) {
  const int64_t k = 4096, n = 4096;
  double gemv = time_matmul(1, k, n, options);  // streams 64 MiB of weights: more than the caches hold
  m.bytes = static_cast<double>(k * n * 4) / gemv;
  const int64_t rows = 128, kk = 512, nn = 512;
  double gemm = time_matmul(rows, kk, nn, options);
  m.flops = 2.0 * static_cast<double>(rows * kk * nn) / gemm;
  double tiny = time_matmul(1, 8, 8, options);
  m.segment_overhead = tiny;
  char what[160];
  std::snprintf(what, sizeof what, "measured: %.1f GB/s (1x%lldx%lld f32 matvec), %.1f GFLOP/s (%lldx%lldx%lld matmul)",
                m.bytes / 1e9, static_cast<long long>(k), static_cast<long long>(n), m.flops / 1e9,
                static_cast<long long>(rows), static_cast<long long>(kk), static_cast<long long>(nn));
  m.compute_source = what;
}

std::vector<CollectiveTiming> time_all_reduce(Communicator& comm, const std::vector<int64_t>& sizes, int repeats) {
  std::vector<CollectiveTiming> out;
  int n = comm.size();
  for (int64_t bytes : sizes) {
    std::vector<float> buffer(static_cast<size_t>(std::max<int64_t>(1, bytes / 4)), 1.0f);
    auto once = [&] { comm.wait(*comm.all_reduce(buffer.data(), static_cast<int64_t>(buffer.size()), DType::F32, ReduceOp::Sum), "all-reduce timing"); };
    once();
    comm.barrier("all-reduce timing");
    CollectiveTiming t;
    t.bytes = static_cast<int64_t>(buffer.size()) * 4;
    t.seconds = median_seconds(repeats, once);
    t.busbw = n > 1 ? static_cast<double>(t.bytes) * 2.0 * (n - 1) / n / t.seconds : 0;
    out.push_back(t);
  }
  return out;
}

void measure_communication(MachineModel& m, Communicator& comm) {
  if (comm.size() < 2) fail("dist: measuring communication needs at least 2 ranks (run under mpirun -np 2 or more)");
  std::vector<CollectiveTiming> t = time_all_reduce(comm, {4096, 4 << 20}, 9);
  double small = t[0].seconds, large = t[1].seconds;
  int n = comm.size();
  double factor = 2.0 * (n - 1) / n;
  m.allreduce_busbw = std::max(1.0, static_cast<double>(t[1].bytes - t[0].bytes) * factor / std::max(1e-9, large - small));
  m.allreduce_latency = std::max(0.0, small - static_cast<double>(t[0].bytes) * factor / m.allreduce_busbw);
  // Point to point: ranks 0 and 1 ping-pong 1 MiB and 8 bytes.
  auto pingpong = [&](int64_t bytes) {
    std::vector<char> buffer(static_cast<size_t>(bytes));
    return median_seconds(9, [&] {
      if (comm.rank() == 0) {
        comm.wait(*comm.send(buffer.data(), bytes, 1, 901), "ping");
        comm.wait(*comm.recv(buffer.data(), bytes, 1, 902), "pong");
      } else if (comm.rank() == 1) {
        comm.wait(*comm.recv(buffer.data(), bytes, 0, 901), "ping");
        comm.wait(*comm.send(buffer.data(), bytes, 0, 902), "pong");
      }
    }) / 2;
  };
  double tiny = pingpong(8), big = pingpong(1 << 20);
  m.p2p_bandwidth = static_cast<double>((1 << 20) - 8) / std::max(1e-9, big - tiny);
  m.p2p_latency = tiny;
  // Every rank takes rank 0's figures, so every rank ranks the plans alike.
  for (double* v : {&m.allreduce_busbw, &m.allreduce_latency, &m.p2p_bandwidth, &m.p2p_latency}) {
    agree(comm, *v, "sharing the communication timings");
  }
  char what[200];
  std::snprintf(what, sizeof what, "measured over %d ranks (%s): all-reduce %.1f us + %.2f GB/s bus bandwidth, transfer %.1f us + %.2f GB/s",
                n, comm.engine(), m.allreduce_latency * 1e6, m.allreduce_busbw / 1e9, m.p2p_latency * 1e6, m.p2p_bandwidth / 1e9);
  m.comm_source = what;
}

MachineModel calibrate(const CompileOptions& compile, Communicator* comm, bool measure_compute_side) {
  MachineModel m;
  if (measure_compute_side) {
    measure_compute(m, compile);
    if (comm) {
      for (double* v : {&m.flops, &m.bytes, &m.segment_overhead}) agree(*comm, *v, "sharing the compute timings");
    }
  }
  if (comm && comm->size() > 1) measure_communication(m, *comm);
  return m;
}

}  // namespace lumen::dist
