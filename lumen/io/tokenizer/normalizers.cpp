#include "lumen/core/error.h"
#include "lumen/io/tokenizer/components.h"
#include "lumen/io/tokenizer/unicode.h"

namespace lumen::io::tokenizer {

namespace {

std::string strip_marks(const std::string& text) {
  std::vector<char32_t> kept;
  for (char32_t c : unicode::decode(unicode::nfd(text))) {
    if (!unicode::is_mark_nonspacing(c)) kept.push_back(c);
  }
  return unicode::encode(kept);
}

Normalizer bert(const Json& j) {
  bool clean = j.value("clean_text", true), chinese = j.value("handle_chinese_chars", true);
  bool lower = j.value("lowercase", true);
  bool strip = j.contains("strip_accents") && !j["strip_accents"].is_null() ? j["strip_accents"].get<bool>() : lower;
  return [=](const std::string& text) {
    std::vector<char32_t> out;
    for (char32_t c : unicode::decode(text)) {
      if (clean) {
        if (c == 0 || c == 0xFFFD || unicode::is_control(c)) continue;
        if (unicode::is_whitespace(c)) c = ' ';
      }
      if (chinese && unicode::is_chinese(c)) {
        out.push_back(' ');
        out.push_back(c);
        out.push_back(' ');
        continue;
      }
      out.push_back(c);
    }
    std::string s = unicode::encode(out);
    if (strip) s = strip_marks(s);
    if (lower) s = unicode::lowercase(s);
    return s;
  };
}

std::string pattern_of(const Json& j, bool* is_regex) {
  const Json& p = j.at("pattern");
  if (p.contains("Regex")) {
    *is_regex = true;
    return p["Regex"].get<std::string>();
  }
  *is_regex = false;
  return p.at("String").get<std::string>();
}

}  // namespace

std::string replace_all(const std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  std::string out;
  size_t last = 0, at;
  while ((at = text.find(from, last)) != std::string::npos) {
    out += text.substr(last, at - last) + to;
    last = at + from.size();
  }
  return out + text.substr(last);
}

Normalizer make_normalizer(const Json& j) {
  if (j.is_null()) return {};
  std::string type = j.at("type").get<std::string>();
  if (type == "BertNormalizer") return bert(j);
  if (type == "Lowercase") return [](const std::string& s) { return unicode::lowercase(s); };
  if (type == "NFC") return [](const std::string& s) { return unicode::nfc(s); };
  if (type == "NFD") return [](const std::string& s) { return unicode::nfd(s); };
  if (type == "NFKC") return [](const std::string& s) { return unicode::nfkc(s); };
  if (type == "NFKD") return [](const std::string& s) { return unicode::nfkd(s); };
  if (type == "StripAccents") {
    return [](const std::string& s) {
      std::vector<char32_t> kept;
      for (char32_t c : unicode::decode(s)) {
        if (!unicode::is_mark_nonspacing(c)) kept.push_back(c);
      }
      return unicode::encode(kept);
    };
  }
  if (type == "Strip") {
    bool left = j.value("strip_left", true), right = j.value("strip_right", true);
    return [=](const std::string& s) {
      std::vector<char32_t> c = unicode::decode(s);
      size_t b = 0, e = c.size();
      while (left && b < e && unicode::is_whitespace(c[b])) ++b;
      while (right && e > b && unicode::is_whitespace(c[e - 1])) --e;
      return unicode::encode(std::vector<char32_t>(c.begin() + static_cast<long>(b), c.begin() + static_cast<long>(e)));
    };
  }
  if (type == "Replace") {
    bool regex = false;
    std::string pattern = pattern_of(j, &regex), content = j.at("content").get<std::string>();
    if (regex) return [=](const std::string& s) { return replace_regex(s, pattern, content); };
    return [=](const std::string& s) { return replace_all(s, pattern, content); };
  }
  if (type == "Prepend") {
    std::string prefix = j.at("prepend").get<std::string>();
    return [=](const std::string& s) { return s.empty() ? s : prefix + s; };
  }
  if (type == "Sequence") {
    std::vector<Normalizer> parts;
    for (const Json& n : j.at("normalizers")) parts.push_back(make_normalizer(n));
    return [=](const std::string& s) {
      std::string out = s;
      for (const Normalizer& n : parts) {
        if (n) out = n(out);
      }
      return out;
    };
  }
  fail("tokenizer: normalizer '", type, "' is not supported (BertNormalizer, Lowercase, NFC, NFD, NFKC, NFKD, StripAccents, Strip, Replace, Prepend, Sequence)");
}

}  // namespace lumen::io::tokenizer
