// llama.cpp's pre-tokenizer splitting (see llama_split.h): the hand-written
// splitters for the common regexes, and the general path with PCRE2 in
// 32-bit, non-UTF mode standing in for std::regex's ECMAScript grammar.
#define PCRE2_CODE_UNIT_WIDTH 32
#include "lumen/io/tokenizer/llama_split.h"

#include <pcre2.h>
#include <utf8proc.h>

#include <map>
#include <memory>
#include <mutex>

#include "lumen/core/error.h"
#include "lumen/io/tokenizer/llama_splitters.h"

namespace lumen::io::tokenizer {

std::vector<uint32_t> llama_codepoints(const std::string& text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  auto continuation = [&](size_t i) { return i < text.size() && (byte(i) & 0xC0) == 0x80; };
  size_t i = 0;
  while (i < text.size()) {
    unsigned char b = byte(i);
    size_t n = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
    bool ok = n > 0;
    for (size_t k = 1; ok && k < n; ++k) ok = continuation(i + k);
    if (!ok) {  // a stray continuation byte, a bad lead byte or a cut sequence
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1Fu) : n == 3 ? (b & 0x0Fu) : (b & 0x07u);
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (byte(i + k) & 0x3Fu);
    out.push_back(cp);
    i += n;
  }
  return out;
}

std::string llama_utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp <= 0x10FFFF) {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s = "\xEF\xBF\xBD";
  }
  return s;
}

CodepointClass classify(uint32_t cp) {
  CodepointClass c;
  c.present = true;
  c.whitespace = (cp >= 9 && cp <= 13) || cp == 32 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
                 (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
                 cp == 0x3000;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: c.letter = true; break;
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: c.mark = true; break;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO: c.number = true; break;
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS: case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF: case UTF8PROC_CATEGORY_PO: c.punctuation = true; break;
    case UTF8PROC_CATEGORY_SM: case UTF8PROC_CATEGORY_SC: case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO: c.symbol = true; break;
    default: break;
  }
  return c;
}

namespace {

// ---- the general path: ECMAScript regexes run by PCRE2 ----

using Units = std::vector<uint32_t>;

// llama.cpp's collapsed form: ASCII stays, other code points become one
// byte naming their category, and \p{..} in the regex becomes a class of
// that byte plus the category's ASCII members.
struct Category {
  const char* property;
  char marker;
  const char* ascii;
};
const Category kCategories[] = {
    {"\\p{N}", '\xD1', "0-9"},
    {"\\p{L}", '\xD2', "A-Za-z"},
    {"\\p{P}", '\xD3', "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}"},
    {"\\p{M}", '\xD4', ""},
    {"\\p{S}", '\xD5', "\\$\\+<->^`\\|\\~"},
    {"\\p{Lu}", '\xD2', "A-Za-z"},
    {"\\p{Ll}", '\xD2', "A-Za-z"},
    {"\\p{Lt}", '\xD2', "A-Za-z"},
    {"\\p{Lm}", '\xD2', "A-Za-z"},
    {"\\p{Lo}", '\xD2', "A-Za-z"},
};

bool uses_categories(const std::string& regex) {
  for (const Category& c : kCategories) {
    if (regex.find(c.property) != std::string::npos) return true;
  }
  return false;
}

std::string collapse_regex(const std::string& regex) {
  for (unsigned char ch : regex) {
    if (ch >= 0x80) fail("tokenizer: regex '", regex, "' mixes Unicode categories and non-ASCII characters (llama.cpp refuses it too)");
  }
  std::string out;
  bool inside = false;  // within [...]
  for (size_t i = 0; i < regex.size(); ++i) {
    char ch = regex[i];
    if (ch == '[' && (i == 0 || regex[i - 1] != '\\')) {
      out += ch;
      inside = true;
      continue;
    }
    if (inside && ch == ']' && regex[i - 1] != '\\') {
      out += ch;
      inside = false;
      continue;
    }
    if (ch == '\\' && i + 3 < regex.size() && regex[i + 1] == 'p' && regex[i + 2] == '{') {
      size_t close = regex.find('}', i + 3);
      const Category* hit = nullptr;
      if (close != std::string::npos && close <= i + 10) {
        std::string property = regex.substr(i, close - i + 1);
        for (const Category& c : kCategories) {
          if (property == c.property) hit = &c;
        }
      }
      if (hit) {
        out += std::string(inside ? "" : "[") + hit->marker + hit->ascii + (inside ? "" : "]");
        i = close;
        continue;
      }
    }
    out += ch;
  }
  return out;
}

uint32_t collapsed_unit(uint32_t cp) {
  if (cp < 128) return cp;
  CodepointClass c = classify(cp);
  if (c.whitespace) return 0x0B;
  if (c.number) return 0xD1;
  if (c.letter) return 0xD2;
  if (c.punctuation) return 0xD3;
  if (c.mark) return 0xD4;
  if (c.symbol) return 0xD5;
  return 0xD0;
}

std::shared_ptr<pcre2_code> compiled(const Units& pattern, const std::string& shown) {
  static std::mutex mutex;
  static std::map<Units, std::shared_ptr<pcre2_code>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(pattern);
  if (it != cache.end()) return it->second;
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_DOLLAR_ENDONLY,
                                   &error, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, 256);
    std::string text;
    for (size_t i = 0; i < 256 && message[i]; ++i) text += static_cast<char>(message[i] < 128 ? message[i] : '?');
    fail("tokenizer: regex '", shown, "' does not compile at offset ", offset, ": ", text);
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort
  std::shared_ptr<pcre2_code> p(code, pcre2_code_free);
  cache[pattern] = p;
  return p;
}

// Splits each piece of `units` (lengths in `pieces`) into matches and the
// text between them, with std::regex_iterator's rules for empty matches.
std::vector<size_t> split_ecmascript(const Units& units, const Units& pattern, const std::string& shown,
                                     const std::vector<size_t>& pieces) {
  std::shared_ptr<pcre2_code> code = compiled(pattern, shown);
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(code.get(), nullptr), pcre2_match_data_free);
  std::vector<size_t> out;
  size_t start = 0;
  for (size_t length : pieces) {
    PCRE2_SPTR subject = reinterpret_cast<PCRE2_SPTR>(units.data() + start);
    size_t done = 0;  // end of the last match
    auto search = [&](size_t from, uint32_t options, size_t& b, size_t& e) {
      int rc = pcre2_match(code.get(), subject, length, from, options, data.get(), nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) return false;
      if (rc < 0) fail("tokenizer: regex '", shown, "' failed on the input (PCRE2 error ", rc, ")");
      PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.get());
      b = ov[0];
      e = ov[1];
      return true;
    };
    size_t from = 0, b = 0, e = 0;
    bool found = search(from, 0, b, e);
    while (found) {
      if (b > done) out.push_back(b - done);
      if (e > b) out.push_back(e - b);
      done = e;
      if (e > b) {
        found = search(e, 0, b, e);
        continue;
      }
      if (e >= length) break;
      found = search(e, PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED, b, e);
      if (!found) found = search(done + 1, 0, b, e);
    }
    if (done < length) out.push_back(length - done);
    start += length;
  }
  return out;
}

}  // namespace

std::vector<std::string> llama_regex_split(const std::string& text, const std::vector<std::string>& regexes) {
  std::vector<uint32_t> cps = llama_codepoints(text);
  std::vector<size_t> pieces;
  if (!cps.empty()) pieces.push_back(cps.size());
  Units collapsed, wide;
  for (const std::string& regex : regexes) {
    if (pieces.empty()) break;
    if (const Splitter* splitter = builtin_splitter(regex)) {
      pieces = (*splitter)(cps, pieces);
      continue;
    }
    if (uses_categories(regex)) {
      if (collapsed.empty()) {
        for (uint32_t cp : cps) collapsed.push_back(collapsed_unit(cp));
      }
      std::string pattern = collapse_regex(regex);
      Units units;
      for (unsigned char ch : pattern) units.push_back(ch);
      pieces = split_ecmascript(collapsed, units, regex, pieces);
    } else {
      if (wide.empty()) {
        for (uint32_t cp : cps) wide.push_back(cp > 0x7F && classify(cp).whitespace ? 0x0B : cp);
      }
      pieces = split_ecmascript(wide, llama_codepoints(regex), regex, pieces);
    }
  }
  std::vector<std::string> words;
  size_t start = 0;
  for (size_t length : pieces) {
    std::string w;
    for (size_t i = start; i < start + length; ++i) w += llama_utf8(cps[i]);
    if (!w.empty()) words.push_back(std::move(w));
    start += length;
  }
  return words;
}

}  // namespace lumen::io::tokenizer
