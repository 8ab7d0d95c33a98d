#include "lumen/io/tokenizer/unicode.h"

#include <utf8proc.h>

#include <cstdlib>

#include "lumen/core/error.h"

namespace lumen::io::unicode {

std::vector<char32_t> decode(const std::string& text) {
  std::vector<char32_t> out;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(text.size());
  while (left > 0) {
    utf8proc_int32_t c;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) {  // one invalid byte
      out.push_back(0xFFFD);
      ++p;
      --left;
      continue;
    }
    out.push_back(static_cast<char32_t>(c));
    p += n;
    left -= n;
  }
  return out;
}

std::string encode(char32_t c) {
  utf8proc_uint8_t buf[4];
  utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
  return std::string(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

std::string encode(const std::vector<char32_t>& cps) {
  std::string out;
  for (char32_t c : cps) out += encode(c);
  return out;
}

std::string printable(const std::string& text) {
  std::string out;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(text.size());
  while (left > 0) {
    utf8proc_int32_t c;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) {
      static const char* hex = "0123456789ABCDEF";
      out += std::string("\\x") + hex[*p >> 4] + hex[*p & 15];
      n = 1;
    } else {
      out.append(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
    }
    p += n;
    left -= n;
  }
  return out;
}

namespace {
utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }
}  // namespace

bool is_whitespace(char32_t c) {
  return (c >= 9 && c <= 13) || c == 32 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN: return true;
    default: return false;
  }
}

bool is_punctuation(char32_t c) {
  if (c < 128) return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
  switch (category(c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO: return true;
    default: return false;
  }
}

bool is_letter(char32_t c) {
  auto k = category(c);
  return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
}

bool is_number(char32_t c) {
  auto k = category(c);
  return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

bool is_mark_nonspacing(char32_t c) { return category(c) == UTF8PROC_CATEGORY_MN; }

bool is_chinese(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

std::string lowercase(const std::string& text) {
  std::string out;
  for (char32_t c : decode(text)) {
    // Rust's to_lowercase maps U+0130 (capital I with dot) to "i\u0307".
    if (c == 0x130) {
      out += "i\xCC\x87";
      continue;
    }
    out += encode(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
  }
  return out;
}

namespace {
std::string normalize(const std::string& text, int options) {
  std::string clean = encode(decode(text));  // invalid bytes -> U+FFFD first
  utf8proc_uint8_t* r = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(clean.data()),
                                    static_cast<utf8proc_ssize_t>(clean.size()), &r,
                                    static_cast<utf8proc_option_t>(UTF8PROC_STABLE | options));
  if (n < 0 || !r) fail("tokenizer: cannot normalize text (", utf8proc_errmsg(n), ")");
  std::string out(reinterpret_cast<const char*>(r), static_cast<size_t>(n));
  std::free(r);
  return out;
}
}  // namespace

std::string nfd(const std::string& text) { return normalize(text, UTF8PROC_DECOMPOSE); }
std::string nfc(const std::string& text) { return normalize(text, UTF8PROC_COMPOSE); }
std::string nfkc(const std::string& text) { return normalize(text, UTF8PROC_COMPOSE | UTF8PROC_COMPAT); }
std::string nfkd(const std::string& text) { return normalize(text, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT); }

}  // namespace lumen::io::unicode
