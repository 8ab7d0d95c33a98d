// Wall-clock intervals for reports (compile stages, runs): seconds since a
// steady_clock time point.
#pragma once

#include <chrono>

namespace lumen {

using SteadyClock = std::chrono::steady_clock;

inline double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

}  // namespace lumen
