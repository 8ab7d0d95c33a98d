// Errors that point into comprehension source: the message, then the source
// line and a caret under the offending token.
//
//   tc: line 2, column 14: unknown tensor 'X' (tensors: A, B)
//     C(m,n) +=! X(m,k) * B(k,n)
//                ^
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "lumen/core/error.h"
#include "lumen/tc/ast.h"

namespace lumen::tc {

// The message with its position, the source line and a caret (^~~ as wide
// as the token).
std::string describe_at(std::string_view source, const Pos& pos, const std::string& message);

// The source text `pos` covers (on its line), for quoting an expression.
std::string source_text(std::string_view source, const Pos& pos);

[[noreturn]] void fail_message_at(std::string_view source, const Pos& pos, const std::string& message);

// Builds the message from streamable parts and throws a lumen::Error.
template <typename... Parts>
[[noreturn]] void fail_at(std::string_view source, const Pos& pos, Parts&&... parts) {
  fail_message_at(source, pos, detail::concat(std::forward<Parts>(parts)...));
}

}  // namespace lumen::tc
