#include "lumen/core/error.h"

#include <cstdint>

namespace lumen {

namespace {

// The length of the valid UTF-8 sequence starting at s[i] (1..4), or 0.
size_t utf8_sequence(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t c = at(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1fu;
  else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0fu;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07u;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((at(i + k) & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (at(i + k) & 0x3fu);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are invalid.
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

void hex_byte(std::string& out, uint8_t b) {
  const char* digits = "0123456789abcdef";
  out += "\\x";
  out += digits[b >> 4];
  out += digits[b & 15];
}

}  // namespace

std::string valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    size_t n = utf8_sequence(bytes, i);
    if (n == 0) {
      hex_byte(out, static_cast<uint8_t>(bytes[i++]));
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string escape_bytes(std::string_view bytes, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  for (; i < bytes.size() && i < max_bytes;) {
    auto c = static_cast<uint8_t>(bytes[i]);
    size_t n = utf8_sequence(bytes, i);
    if (n == 0 || c < 0x20 || c == 0x7f) {
      hex_byte(out, c);
      ++i;
    } else if (c == '\\') {
      out += "\\\\";
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  if (i < bytes.size()) out += "... (" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

}  // namespace lumen
