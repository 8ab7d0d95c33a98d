#include <cstdio>

#include "lumen/core/error.h"
#include "lumen/io/tokenizer/components.h"
#include "lumen/io/tokenizer/unicode.h"

namespace lumen::io::tokenizer {

std::string replace_all(const std::string& text, const std::string& from, const std::string& to);

namespace {

// Lossy UTF-8: bytes that do not form valid UTF-8 become U+FFFD.
std::string lossy_utf8(const std::string& bytes) { return unicode::encode(unicode::decode(bytes)); }

std::optional<unsigned char> byte_token(const std::string& t) {
  unsigned int v;
  if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && std::sscanf(t.c_str() + 3, "%2X", &v) == 1) {
    return static_cast<unsigned char>(v);
  }
  return std::nullopt;
}

Decoder per_token(std::function<std::string(const std::string&, size_t)> f) {
  return [f](const std::vector<std::string>& tokens) {
    std::vector<std::string> out;
    for (size_t i = 0; i < tokens.size(); ++i) out.push_back(f(tokens[i], i));
    return out;
  };
}

}  // namespace

Decoder make_decoder(const Json& j) {
  if (j.is_null()) return {};
  std::string type = j.at("type").get<std::string>();
  if (type == "ByteLevel") {
    return [](const std::vector<std::string>& tokens) {
      std::string bytes;
      for (const std::string& t : tokens) {
        for (char32_t c : unicode::decode(t)) {
          auto b = char_to_byte(c);
          bytes += b ? std::string(1, static_cast<char>(*b)) : unicode::encode(c);
        }
      }
      return std::vector<std::string>{lossy_utf8(bytes)};
    };
  }
  if (type == "WordPiece") {
    std::string prefix = j.value("prefix", std::string("##"));
    bool cleanup = j.value("cleanup", true);
    // As Hugging Face: continuation prefixes dropped, other tokens spaced, cleanup per token.
    return per_token([=](const std::string& token, size_t i) {
      std::string t = token;
      if (i > 0) t = t.compare(0, prefix.size(), prefix) == 0 ? t.substr(prefix.size()) : " " + t;
      if (cleanup) {
        static const std::pair<const char*, const char*> fixes[] = {
            {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
            {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
        for (const auto& [from, to] : fixes) t = replace_all(t, from, to);
      }
      return t;
    });
  }
  if (type == "Metaspace") {
    std::string rep = j.value("replacement", std::string("\xE2\x96\x81"));
    std::string scheme = j.value("prepend_scheme", std::string(j.value("add_prefix_space", true) ? "always" : "never"));
    return per_token([=](const std::string& t, size_t i) {
      std::string s = replace_all(t, rep, " ");
      if (i == 0 && scheme != "never" && !s.empty() && s[0] == ' ') s = s.substr(1);
      return s;
    });
  }
  if (type == "Replace") {
    const Json& p = j.at("pattern");
    std::string content = j.at("content").get<std::string>();
    if (p.contains("Regex")) {
      std::string pattern = p["Regex"].get<std::string>();
      return per_token([=](const std::string& t, size_t) { return replace_regex(t, pattern, content); });
    }
    std::string from = p.at("String").get<std::string>();
    return per_token([=](const std::string& t, size_t) { return replace_all(t, from, content); });
  }
  if (type == "ByteFallback") {
    return [](const std::vector<std::string>& tokens) {
      std::vector<std::string> out;
      std::string pending;  // consecutive byte tokens
      auto flush = [&] {
        if (pending.empty()) return;
        std::string text = unicode::encode(unicode::decode(pending));
        // A byte run that is not valid UTF-8 decodes to one U+FFFD per byte.
        if (text != pending) text.clear();
        if (text.empty()) {
          for (size_t k = 0; k < pending.size(); ++k) out.push_back("\xEF\xBF\xBD");
        } else {
          out.push_back(text);
        }
        pending.clear();
      };
      for (const std::string& t : tokens) {
        if (auto b = byte_token(t)) {
          pending += static_cast<char>(*b);
        } else {
          flush();
          out.push_back(t);
        }
      }
      flush();
      return out;
    };
  }
  if (type == "Fuse") {
    return [](const std::vector<std::string>& tokens) {
      std::string all;
      for (const std::string& t : tokens) all += t;
      return std::vector<std::string>{all};
    };
  }
  if (type == "Strip") {
    std::string content = j.value("content", std::string(" "));
    int64_t start = integer_field(j, "start", 0, 0, INT32_MAX), stop = integer_field(j, "stop", 0, 0, INT32_MAX);
    return per_token([=](const std::string& t, size_t) {
      std::string s = t;
      for (int64_t k = 0; k < start && s.compare(0, content.size(), content) == 0; ++k) s = s.substr(content.size());
      for (int64_t k = 0; k < stop && s.size() >= content.size() &&
                          s.compare(s.size() - content.size(), content.size(), content) == 0;
           ++k) {
        s.resize(s.size() - content.size());
      }
      return s;
    });
  }
  if (type == "BPEDecoder") {
    std::string suffix = j.value("suffix", std::string("</w>"));
    return [=](const std::vector<std::string>& tokens) {
      std::vector<std::string> out;
      for (size_t i = 0; i < tokens.size(); ++i) out.push_back(replace_all(tokens[i], suffix, i + 1 < tokens.size() ? " " : ""));
      return out;
    };
  }
  if (type == "Sequence") {
    std::vector<Decoder> parts;
    for (const Json& d : j.at("decoders")) parts.push_back(make_decoder(d));
    return [=](const std::vector<std::string>& tokens) {
      std::vector<std::string> out = tokens;
      for (const Decoder& d : parts) {
        if (d) out = d(out);
      }
      return out;
    };
  }
  fail("tokenizer: decoder '", type,
       "' is not supported (ByteLevel, WordPiece, Metaspace, Replace, ByteFallback, Fuse, Strip, BPEDecoder, Sequence)");
}

PostProcessor make_post_processor(const Json& j, const Model& model) {
  PostProcessor p;
  if (j.is_null()) return p;
  std::string type = j.at("type").get<std::string>();
  auto id_of = [&](const Json& pair) {
    // [token, id] pairs (BertProcessing / RobertaProcessing)
    return token_id(pair.at(1), "a post-processor token id");
  };
  if (type == "TemplateProcessing") {
    bool after = false;
    for (const Json& item : j.at("single")) {
      if (item.contains("Sequence")) {
        after = true;
        continue;
      }
      std::string name = item.at("SpecialToken").at("id").get<std::string>();
      const Json& special = j.at("special_tokens").at(name);
      for (const Json& id : special.at("ids")) (after ? p.suffix : p.prefix).push_back(token_id(id, "a post-processor token id"));
    }
    return p;
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    p.prefix.push_back(id_of(j.at("cls")));
    p.suffix.push_back(id_of(j.at("sep")));
    return p;
  }
  if (type == "ByteLevel") return p;
  if (type == "Sequence") {
    for (const Json& part : j.at("processors")) {
      PostProcessor q = make_post_processor(part, model);
      p.prefix.insert(p.prefix.end(), q.prefix.begin(), q.prefix.end());
      p.suffix.insert(p.suffix.end(), q.suffix.begin(), q.suffix.end());
    }
    return p;
  }
  fail("tokenizer: post-processor '", type, "' is not supported (TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence)");
}

}  // namespace lumen::io::tokenizer
