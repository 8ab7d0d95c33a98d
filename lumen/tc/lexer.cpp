#include "lumen/tc/lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "lumen/tc/diagnostic.h"

namespace lumen::tc {

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(source) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space();
      Token t;
      t.pos = here(1);
      if (at_ >= src_.size()) {
        t.kind = TokenKind::End;
        out.push_back(t);
        return out;
      }
      char c = src_[at_];
      if (ident_start(c)) {
        t = ident();
      } else if (digit(c) || (c == '.' && at_ + 1 < src_.size() && digit(src_[at_ + 1]))) {
        t = number();
      } else {
        t = punct();
      }
      out.push_back(std::move(t));
    }
  }

 private:
  Pos here(int length) const { return Pos{line_, static_cast<int>(at_ - line_start_) + 1, length}; }

  void advance(size_t n) {
    for (size_t i = 0; i < n && at_ < src_.size(); ++i, ++at_) {
      if (src_[at_] == '\n') {
        ++line_;
        line_start_ = at_ + 1;
      }
    }
  }

  void skip_space() {
    while (at_ < src_.size()) {
      char c = src_[at_];
      if (c == '#') {
        while (at_ < src_.size() && src_[at_] != '\n') advance(1);
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        advance(1);
      } else {
        return;
      }
    }
  }

  bool starts(std::string_view s) const { return src_.substr(at_, s.size()) == s; }

  Token ident() {
    size_t end = at_;
    while (end < src_.size() && ident_char(src_[end])) ++end;
    Token t;
    t.text = std::string(src_.substr(at_, end - at_));
    t.pos = here(static_cast<int>(end - at_));
    t.kind = TokenKind::Ident;
    // max= and min= (and their ! forms) are assignment operators; max(...) is a call.
    if ((t.text == "max" || t.text == "min") && end < src_.size() && src_[end] == '=' &&
        !(end + 1 < src_.size() && src_[end + 1] == '=')) {
      size_t len = end - at_ + 1;
      if (end + 1 < src_.size() && src_[end + 1] == '!') ++len;
      t.kind = TokenKind::Assign;
      t.text = std::string(src_.substr(at_, len));
      t.pos.length = static_cast<int>(len);
      advance(len);
      return t;
    }
    advance(end - at_);
    return t;
  }

  Token number() {
    size_t end = at_;
    bool integer = true;
    while (end < src_.size() && digit(src_[end])) ++end;
    if (end < src_.size() && src_[end] == '.') {
      integer = false;
      ++end;
      while (end < src_.size() && digit(src_[end])) ++end;
    }
    if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t exp = end + 1;
      if (exp < src_.size() && (src_[exp] == '+' || src_[exp] == '-')) ++exp;
      if (exp < src_.size() && digit(src_[exp])) {
        integer = false;
        end = exp;
        while (end < src_.size() && digit(src_[end])) ++end;
      }
    }
    Token t;
    t.kind = TokenKind::Number;
    t.text = std::string(src_.substr(at_, end - at_));
    t.pos = here(static_cast<int>(end - at_));
    t.integer = integer;
    errno = 0;
    t.number = std::strtod(t.text.c_str(), nullptr);
    if (errno == ERANGE || (integer && t.number > 9.0e15)) fail_at(src_, t.pos, "number '", t.text, "' is out of range");
    advance(end - at_);
    return t;
  }

  Token punct() {
    static const char* const kOps[] = {"+=!", "*=!", "->", "<=", ">=", "==", "!=", "&&", "||", "+=", "*=",
                                       "(", ")", "{", "}", ",", ":", ";", "?", "+", "-", "*", "/", "%",
                                       "<", ">", "!", "="};
    for (const char* op : kOps) {
      std::string_view s(op);
      if (!starts(s)) continue;
      Token t;
      t.text = std::string(s);
      t.pos = here(static_cast<int>(s.size()));
      bool assign = s == "=" || s == "+=" || s == "*=" || s == "+=!" || s == "*=!";
      t.kind = assign ? TokenKind::Assign : TokenKind::Punct;
      advance(s.size());
      return t;
    }
    unsigned char c = static_cast<unsigned char>(src_[at_]);
    std::string shown = std::isprint(c) ? std::string("'") + static_cast<char>(c) + "'" : escape_bytes(src_.substr(at_, 1));
    fail_at(src_, here(1), "unexpected character ", shown);
  }

  std::string_view src_;
  size_t at_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace lumen::tc
