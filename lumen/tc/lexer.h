// Tokens of the comprehension language. `#` starts a comment to the end of
// the line; whitespace (newlines included) only separates tokens.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lumen/tc/ast.h"

namespace lumen::tc {

enum class TokenKind : uint8_t {
  Ident,
  Number,
  Punct,  // ( ) { } , : ; ? and the operators
  Assign, // = += *= max= min= and the init forms +=! *=! max=! min=!
  End,
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;
  Pos pos;
  double number = 0;
  bool integer = false;
};

// Splits `source` into tokens, ending with one End token. A character that
// starts no token is an error with its line and column.
std::vector<Token> tokenize(std::string_view source);

}  // namespace lumen::tc
