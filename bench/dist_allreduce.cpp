// All-reduce bus bandwidth per message size: lumen's Communicator (a
// non-blocking all-reduce started and waited on, as DistProgram does) against
// plain MPI loops in the same run, interleaved: blocking MPI_Allreduce, and
// MPI_Iallreduce + MPI_Wait (the same MPI operation lumen starts, so the
// difference is lumen's own overhead: the hand-off to MPI's thread and the
// polling). OpenMPI picks different algorithms for the two MPI calls.
//
//   mpirun -np 2 build/bench/dist_allreduce [rounds]   -> one JSON list on rank 0's stdout
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "lumen/dist/communicator.h"
#include "lumen/dist/mpi_communicator.h"

using namespace lumen;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per all-reduce through lumen, over `repeats` calls.
double through_lumen(dist::Communicator& w, std::vector<float>& buffer, int repeats) {
  w.barrier("bench");
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) {
    w.wait(*w.all_reduce(buffer.data(), static_cast<int64_t>(buffer.size()), DType::F32, dist::ReduceOp::Sum), "bench");
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repeats;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  dist::Communicator& w = dist::world();
  int n = w.size();
  std::string json = "[";
  for (int64_t bytes : {int64_t{4} << 10, int64_t{64} << 10, int64_t{1} << 20, int64_t{4} << 20, int64_t{16} << 20}) {
    std::vector<float> buffer(static_cast<size_t>(bytes / 4), 1.0f / static_cast<float>(n));
    int repeats = static_cast<int>(std::clamp<int64_t>((int64_t{256} << 20) / bytes, 5, 200));
    std::vector<double> lumen_s, mpi_s, nb_s;
    through_lumen(w, buffer, 2);  // warm-up
    dist::plain_mpi_allreduce_seconds(buffer.data(), static_cast<int64_t>(buffer.size()), 2);
    for (int r = 0; r < rounds; ++r) {  // interleaved
      lumen_s.push_back(through_lumen(w, buffer, repeats));
      mpi_s.push_back(dist::plain_mpi_allreduce_seconds(buffer.data(), static_cast<int64_t>(buffer.size()), repeats));
      nb_s.push_back(dist::plain_mpi_allreduce_seconds(buffer.data(), static_cast<int64_t>(buffer.size()), repeats, true));
    }
    double l = median(lumen_s), m = median(mpi_s), b = median(nb_s), factor = n > 1 ? 2.0 * (n - 1) / n : 0.0;
    auto busbw = [&](double s) { return static_cast<double>(bytes) * factor / s / 1e9; };
    char row[400];
    std::snprintf(row, sizeof row,
                  "%s{\"bytes\": %lld, \"ranks\": %d, \"lumen_us\": %.3f, \"mpi_us\": %.3f, \"mpi_nonblocking_us\": %.3f, "
                  "\"lumen_busbw_gbs\": %.4f, \"mpi_busbw_gbs\": %.4f, \"mpi_nonblocking_busbw_gbs\": %.4f, "
                  "\"overhead_vs_allreduce\": %.4f, \"overhead_vs_iallreduce\": %.4f}",
                  json.size() > 1 ? ", " : "", static_cast<long long>(bytes), n, l * 1e6, m * 1e6, b * 1e6, busbw(l), busbw(m),
                  busbw(b), l / m - 1, l / b - 1);
    json += row;
  }
  json += "]";
  if (w.rank() == 0) std::printf("%s\n", json.c_str());
  return 0;
}
