// llama.cpp's hand-written splitters: GPT-2, the Llama 3 family (Llama 3,
// Qwen 2, Qwen 3.5), newline runs and digit groups. Each scans a piece once;
// a token ends where llama.cpp's scan ends it.
#include "lumen/io/tokenizer/llama_splitters.h"

#include <utf8proc.h>

#include <map>

namespace lumen::io::tokenizer {

namespace {

constexpr uint32_t kOutside = 0xFFFFFFFF;

// One piece being scanned: code points and classes by position (nothing
// outside the piece), and the lengths of the tokens cut so far.
class Scan {
 public:
  Scan(const std::vector<uint32_t>& cps, size_t begin, size_t end, std::vector<size_t>& out)
      : cps_(cps), begin_(begin), end_(end), last_(begin), out_(out) {}
  size_t begin() const { return begin_; }
  size_t end() const { return end_; }
  uint32_t cp(size_t p) const { return p >= begin_ && p < end_ ? cps_[p] : kOutside; }
  CodepointClass cls(size_t p) const { return p >= begin_ && p < end_ ? classify(cps_[p]) : CodepointClass{}; }
  void cut(size_t end) {  // a token from the previous cut to `end`
    if (end > last_) out_.push_back(end - last_);
    last_ = end;
  }

 private:
  const std::vector<uint32_t>& cps_;
  size_t begin_, end_, last_;
  std::vector<size_t>& out_;
};

template <typename ScanPiece>
Splitter per_piece(ScanPiece scan_piece) {
  return [scan_piece](const std::vector<uint32_t>& cps, const std::vector<size_t>& pieces) {
    std::vector<size_t> out;
    size_t start = 0;
    for (size_t length : pieces) {
      Scan s(cps, start, start + length, out);
      scan_piece(s);
      start += length;
    }
    return out;
  };
}

uint32_t lower(uint32_t cp) { return static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))); }

// 's 't 're 've 'm 'll 'd at `pos` (case-folded when `fold`): its length, or 0.
size_t contraction(const Scan& s, size_t pos, bool fold) {
  if (s.cp(pos) != '\'' || pos + 1 >= s.end()) return 0;
  uint32_t a = fold ? lower(s.cp(pos + 1)) : s.cp(pos + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= s.end()) return 0;
  uint32_t b = fold ? lower(s.cp(pos + 2)) : s.cp(pos + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// Whitespace at `pos` (it ends the scan step): \s+(?!\S) keeps the last
// space for the next token unless the run ends the piece; \s*[\r\n]+ (when
// `newlines`) takes the run up to its last line break.
size_t whitespace_end(const Scan& s, size_t pos, bool newlines) {
  size_t n = 0, last_break = 0;
  while (s.cls(pos + n).whitespace) {
    uint32_t c = s.cp(pos + n);
    if (c == '\r' || c == '\n') last_break = pos + n + 1;
    ++n;
  }
  if (newlines && last_break > 0) return last_break;
  if (n > 1 && s.cp(pos + n) != kOutside) return pos + n - 1;
  if (n > 0) return pos + n;
  return pos + 1;  // nothing matches: one code point
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
void scan_gpt2(Scan& s) {
  for (size_t pos = s.begin(); pos < s.end();) {
    if (size_t k = contraction(s, pos, false)) {
      pos += k;
      s.cut(pos);
      continue;
    }
    bool space = s.cp(pos) == ' ';
    CodepointClass next = space ? s.cls(pos + 1) : s.cls(pos);
    auto run = [&](auto member) {
      pos += space;
      while (member(s.cls(pos))) ++pos;
      s.cut(pos);
    };
    if (next.letter) {
      run([](const CodepointClass& c) { return c.letter; });
    } else if (next.number) {
      run([](const CodepointClass& c) { return c.number; });
    } else if (next.present && !next.whitespace) {
      run([](const CodepointClass& c) { return c.present && !c.whitespace && !c.letter && !c.number; });
    } else {
      pos = whitespace_end(s, pos, false);
      s.cut(pos);
    }
  }
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// with D = `digits` (3: Llama 3, 1: Qwen 2); `marks`: letters runs take \p{M} too (Qwen 3.5).
void scan_llama3(Scan& s, size_t digits, bool marks) {
  auto wordish = [marks](const CodepointClass& c) { return c.letter || (marks && c.mark); };
  for (size_t pos = s.begin(); pos < s.end();) {
    if (size_t k = contraction(s, pos, true)) {
      pos += k;
      s.cut(pos);
      continue;
    }
    uint32_t cp = s.cp(pos);
    CodepointClass here = s.cls(pos);
    if (!(cp == '\r' || cp == '\n' || here.number) && (wordish(here) || wordish(s.cls(pos + 1)))) {
      ++pos;
      while (wordish(s.cls(pos))) ++pos;
      s.cut(pos);
      continue;
    }
    if (here.number) {
      size_t first = pos;
      while (s.cls(pos).number) {
        if (++pos - first >= digits) {
          s.cut(pos);
          first = pos;
        }
      }
      s.cut(pos);
      continue;
    }
    CodepointClass next = cp == ' ' ? s.cls(pos + 1) : here;
    auto other = [&](const CodepointClass& c) { return !(c.whitespace || wordish(c) || c.letter || c.number); };
    if (other(next)) {
      pos += cp == ' ';
      while (other(s.cls(pos)) && s.cls(pos).present) ++pos;
      while (s.cp(pos) == '\r' || s.cp(pos) == '\n') ++pos;
      s.cut(pos);
      continue;
    }
    pos = whitespace_end(s, pos, true);
    s.cut(pos);
  }
}

// [^\n]+|[\n]+
void scan_newlines(Scan& s) {
  for (size_t pos = s.begin(); pos < s.end();) {
    bool newline = s.cp(pos) == '\n';
    while (pos < s.end() && (s.cp(pos) == '\n') == newline) ++pos;
    s.cut(pos);
  }
}

// Digit runs in groups of three from the right. As in llama.cpp, the text
// before a run joins the run's first group (a later regex separates them).
void scan_digit_groups(Scan& s) {
  for (size_t pos = s.begin(); pos < s.end();) {
    if (!s.cls(pos).number) {
      ++pos;
      continue;
    }
    size_t first = pos;
    while (pos < s.end() && s.cls(pos).number) ++pos;
    size_t count = pos - first, at = first;
    if (count % 3) {
      at += count % 3;
      s.cut(at);
    }
    while (at < first + count) {
      at += 3;
      s.cut(at);
    }
  }
  s.cut(s.end());
}

const std::map<std::string, Splitter>& splitters() {
  static const std::map<std::string, Splitter> table = [] {
    std::map<std::string, Splitter> t;
    Splitter llama3 = per_piece([](Scan& s) { scan_llama3(s, 3, false); });
    t["'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"] = per_piece(scan_gpt2);
    t["(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
      "\\s+(?!\\S)|\\s+"] = llama3;
    t["(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}"
      "\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"] = llama3;
    t["(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
      "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"] = per_piece([](Scan& s) { scan_llama3(s, 1, false); });
    t["(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}"
      "\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"] = per_piece([](Scan& s) { scan_llama3(s, 1, true); });
    t["[^\\n]+|[\\n]+"] = per_piece(scan_newlines);
    t["\\p{AFMoE_digits}"] = per_piece(scan_digit_groups);
    t["\\d{1,3}(?=(?:\\d{3})*\\b)"] = per_piece(scan_digit_groups);
    return t;
  }();
  return table;
}

}  // namespace

const Splitter* builtin_splitter(const std::string& regex) {
  auto it = splitters().find(regex);
  return it == splitters().end() ? nullptr : &it->second;
}

}  // namespace lumen::io::tokenizer
