#include "lumen/dist/communicator.h"

#include <cstdlib>
#include <vector>

#include "lumen/core/error.h"

namespace lumen::dist {

double Communicator::default_timeout_s() {
  const char* env = std::getenv("LUMEN_DIST_TIMEOUT");
  if (!env || !*env) return 120.0;
  char* end = nullptr;
  double v = std::strtod(env, &end);
  if (end == env || *end != '\0' || !(v > 0)) fail("LUMEN_DIST_TIMEOUT='", env, "' must be a positive number of seconds");
  return v;
}

void Communicator::wait(CommRequest& request, const std::string& what) const {
  if (request.wait_for(timeout_s)) return;
  on_timeout();
  fail("dist: rank ", rank(), " of ", size(), " (", engine(), ") waited ", timeout_s, " s for ", what,
       " without an answer: a peer rank died, hangs or runs a different program; stopping "
       "(LUMEN_DIST_TIMEOUT sets the limit)");
}

void Communicator::barrier(const std::string& what) {
  int32_t one = 1;
  auto r = all_reduce(&one, 1, DType::I32, ReduceOp::Sum);
  wait(*r, what);
}

std::vector<uint64_t> Communicator::all_gather_u64(uint64_t value, const std::string& what) {
  std::vector<uint64_t> all(static_cast<size_t>(size()));
  auto r = all_gather(&value, all.data(), 1, DType::I64);
  wait(*r, what);
  return all;
}

bool launched_with_ranks() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const char* v = std::getenv(name);
    if (v && std::atoi(v) > 1) return true;
  }
  return false;
}

}  // namespace lumen::dist
