// lumen::Error — the one exception type lumen raises for bad input.
//
// A message says what was being done, with which shapes/dtypes/names, and what
// to do about it: "matmul: inner dims differ: a is [3, 4], b is [5, 2]
// (a.shape[-1] must equal b.shape[-2])".
//
// A message is always valid UTF-8 (bytes that are not are written \xNN), so
// Python receives a lumen.Error, never a UnicodeDecodeError. Names and values
// read from a file go through `quoted_bytes` to escape control bytes as well.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace lumen {

// `bytes` with every byte that is not part of valid UTF-8 written as \xNN.
std::string valid_utf8(std::string_view bytes);
// Bytes from a file, fit for a message: invalid UTF-8, control bytes (NUL,
// newlines, escape) and backslashes escaped (\xNN, \\), cut after `max_bytes`
// with "..." and the full length.
std::string escape_bytes(std::string_view bytes, size_t max_bytes = 200);

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(valid_utf8(message)) {}
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
