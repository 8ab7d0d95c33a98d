// lumen::Error — the one exception type lumen raises for bad input.
//
// A message says what was being done, with which shapes/dtypes/names, and what
// to do about it: "matmul: inner dims differ: a is [3, 4], b is [5, 2]
// (a.shape[-1] must equal b.shape[-2])".
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace lumen {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
template <typename... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}
}  // namespace detail

// Builds and throws an Error from streamable parts: fail("gather: index ", i, " out of range").
template <typename... Parts>
[[noreturn]] void fail(Parts&&... parts) {
  throw Error(detail::concat(std::forward<Parts>(parts)...));
}

}  // namespace lumen
