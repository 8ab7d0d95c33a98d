#include "lumen/core/error.h"
#include "lumen/io/tokenizer/components.h"
#include "lumen/io/tokenizer/unicode.h"

namespace lumen::io::tokenizer {

const char* const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string replace_all(const std::string& text, const std::string& from, const std::string& to);

namespace {

// Applies `f` (one piece -> pieces) to every piece.
PreTokenizer each(std::function<std::vector<std::string>(const std::string&)> f) {
  return [f](const std::vector<std::string>& pieces) {
    std::vector<std::string> out;
    for (const std::string& p : pieces) {
      for (std::string& q : f(p)) {
        if (!q.empty()) out.push_back(std::move(q));
      }
    }
    return out;
  };
}

// Splits at characters: `drop` ones are removed, `isolate` ones stand alone.
std::vector<std::string> split_chars(const std::string& text, const std::function<bool(char32_t)>& drop,
                                     const std::function<bool(char32_t)>& isolate) {
  std::vector<std::string> out;
  std::string current;
  for (char32_t c : unicode::decode(text)) {
    if (drop(c)) {
      if (!current.empty()) out.push_back(std::move(current));
      current.clear();
    } else if (isolate(c)) {
      if (!current.empty()) out.push_back(std::move(current));
      current.clear();
      out.push_back(unicode::encode(c));
    } else {
      current += unicode::encode(c);
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

SplitBehavior behavior_of(const std::string& name) {
  if (name == "Removed") return SplitBehavior::Removed;
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  fail("tokenizer: split behavior '", name, "' is unknown");
}

std::string escape_regex(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

PreTokenizer make_pre_tokenizer(const Json& j) {
  if (j.is_null()) return {};
  std::string type = j.at("type").get<std::string>();
  if (type == "BertPreTokenizer") {
    return each([](const std::string& s) { return split_chars(s, unicode::is_whitespace, unicode::is_punctuation); });
  }
  if (type == "WhitespaceSplit") {
    return each([](const std::string& s) { return split_chars(s, unicode::is_whitespace, [](char32_t) { return false; }); });
  }
  if (type == "Whitespace") {
    return each([](const std::string& s) { return split_regex(s, R"(\w+|[^\w\s]+)", SplitBehavior::Removed, true); });
  }
  if (type == "Punctuation") {
    SplitBehavior b = behavior_of(j.value("behavior", std::string("Isolated")));
    return each([b](const std::string& s) { return split_regex(s, R"([\p{P}!-/:-@\[-`{-~])", b, false); });
  }
  if (type == "Digits") {
    bool individual = j.value("individual_digits", false);
    return each([individual](const std::string& s) {
      return split_regex(s, individual ? R"(\p{N})" : R"(\p{N}+)", SplitBehavior::Isolated, false);
    });
  }
  if (type == "Split") {
    const Json& p = j.at("pattern");
    std::string pattern = p.contains("Regex") ? p["Regex"].get<std::string>() : escape_regex(p.at("String").get<std::string>());
    SplitBehavior b = behavior_of(j.at("behavior").get<std::string>());
    bool invert = j.value("invert", false);
    return each([=](const std::string& s) { return split_regex(s, pattern, b, invert); });
  }
  if (type == "ByteLevel") {
    bool prefix = j.value("add_prefix_space", true), regex = j.value("use_regex", true);
    return [=](const std::vector<std::string>& pieces) {
      std::vector<std::string> out;
      for (size_t i = 0; i < pieces.size(); ++i) {
        std::string s = pieces[i];
        if (prefix && i == 0 && !s.empty() && s[0] != ' ') s = " " + s;
        std::vector<std::string> words = regex ? split_regex(s, kGpt2Pattern, SplitBehavior::Isolated, false)
                                               : std::vector<std::string>{s};
        for (const std::string& w : words) {
          std::string mapped;
          for (unsigned char b : w) mapped += byte_to_char(b);
          if (!mapped.empty()) out.push_back(std::move(mapped));
        }
      }
      return out;
    };
  }
  if (type == "Metaspace") {
    std::string rep = j.value("replacement", std::string("\xE2\x96\x81"));
    std::string scheme = j.value("prepend_scheme", std::string(j.value("add_prefix_space", true) ? "always" : "never"));
    bool split = j.value("split", true);
    return [=](const std::vector<std::string>& pieces) {
      std::vector<std::string> out;
      for (size_t i = 0; i < pieces.size(); ++i) {
        std::string s = replace_all(pieces[i], " ", rep);
        bool prepend = scheme == "always" || (scheme == "first" && i == 0);
        if (prepend && s.compare(0, rep.size(), rep) != 0) s = rep + s;
        if (!split) {
          out.push_back(s);
          continue;
        }
        for (std::string& w : split_regex(s, escape_regex(rep), SplitBehavior::MergedWithNext, false)) {
          if (!w.empty()) out.push_back(std::move(w));
        }
      }
      return out;
    };
  }
  if (type == "Sequence") {
    std::vector<PreTokenizer> parts;
    for (const Json& p : j.at("pretokenizers")) parts.push_back(make_pre_tokenizer(p));
    return [=](const std::vector<std::string>& pieces) {
      std::vector<std::string> out = pieces;
      for (const PreTokenizer& p : parts) {
        if (p) out = p(out);
      }
      return out;
    };
  }
  fail("tokenizer: pre-tokenizer '", type,
       "' is not supported (BertPreTokenizer, ByteLevel, Metaspace, Split, Whitespace, WhitespaceSplit, Punctuation, Digits, Sequence)");
}

}  // namespace lumen::io::tokenizer
