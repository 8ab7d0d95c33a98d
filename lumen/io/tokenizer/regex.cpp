// Regex splitting for pre-tokenizers, with PCRE2 in Unicode mode (the
// patterns in tokenizer.json use \p{L}, \p{N} and lookahead).
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <mutex>

#include "lumen/core/error.h"
#include "lumen/io/tokenizer/pipeline.h"
#include "lumen/io/tokenizer/unicode.h"

namespace lumen::io::tokenizer {

namespace {

// A compiled pattern, cached by its text (patterns are few and reused).
std::shared_ptr<pcre2_code> compiled(const std::string& pattern) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<pcre2_code>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(pattern);
  if (it != cache.end()) return it->second;
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    fail("tokenizer: regex '", unicode::printable(pattern), "' does not compile at offset ", offset, ": ", reinterpret_cast<char*>(message));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort
  std::shared_ptr<pcre2_code> p(code, pcre2_code_free);
  cache[pattern] = p;
  return p;
}

// [begin, end) byte ranges of the matches of `pattern` in `text`.
std::vector<std::pair<size_t, size_t>> matches(const std::string& text, const std::string& pattern) {
  std::shared_ptr<pcre2_code> code = compiled(pattern);
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(code.get(), nullptr), pcre2_match_data_free);
  std::vector<std::pair<size_t, size_t>> out;
  size_t at = 0;
  while (at <= text.size()) {
    int rc = pcre2_match(code.get(), reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), at, 0, data.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) fail("tokenizer: regex '", unicode::printable(pattern), "' failed on the input (error ", rc, ")");
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.get());
    size_t b = ov[0], e = ov[1];
    if (e == b) {  // empty match: skip one character
      if (b >= text.size()) break;
      at = b + 1;
      while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
      continue;
    }
    out.emplace_back(b, e);
    at = e;
  }
  return out;
}

}  // namespace

std::vector<std::string> split_regex(const std::string& text, const std::string& pattern, SplitBehavior behavior, bool invert) {
  // Pieces with a flag: does it match (after inversion)?
  std::vector<std::pair<std::string, bool>> pieces;
  size_t last = 0;
  for (const auto& [b, e] : matches(text, pattern)) {
    if (b > last) pieces.emplace_back(text.substr(last, b - last), invert);
    pieces.emplace_back(text.substr(b, e - b), !invert);
    last = e;
  }
  if (last < text.size()) pieces.emplace_back(text.substr(last), invert);
  std::vector<std::string> out;
  switch (behavior) {
    case SplitBehavior::Removed:
      for (const auto& [p, m] : pieces) {
        if (!m) out.push_back(p);
      }
      break;
    case SplitBehavior::Isolated:
      for (const auto& [p, m] : pieces) out.push_back(p);
      break;
    case SplitBehavior::MergedWithPrevious:
      for (const auto& [p, m] : pieces) {
        if (m && !out.empty()) {
          out.back() += p;
        } else {
          out.push_back(p);
        }
      }
      break;
    case SplitBehavior::MergedWithNext: {
      std::string pending;
      for (const auto& [p, m] : pieces) {
        if (m) {
          if (!pending.empty()) out.push_back(pending);
          pending = p;
        } else {
          out.push_back(pending + p);
          pending.clear();
        }
      }
      if (!pending.empty()) out.push_back(pending);
      break;
    }
    case SplitBehavior::Contiguous: {
      bool last_match = false;
      for (const auto& [p, m] : pieces) {
        if (m && last_match && !out.empty()) {
          out.back() += p;
        } else {
          out.push_back(p);
        }
        last_match = m;
      }
      break;
    }
  }
  return out;
}

std::string replace_regex(const std::string& text, const std::string& pattern, const std::string& content) {
  std::string out;
  size_t last = 0;
  for (const auto& [b, e] : matches(text, pattern)) {
    out += text.substr(last, b - last) + content;
    last = e;
  }
  return out + text.substr(last);
}

}  // namespace lumen::io::tokenizer
