// tokenizer.json -> a PipelineTokenizer.

#include "lumen/core/error.h"
#include "lumen/io/text_file.h"
#include "lumen/io/tokenizer/components.h"
#include "lumen/io/tokenizer/unicode.h"

namespace lumen::io {

using tokenizer::Json;

int32_t tokenizer::token_id(const Json& j, const std::string& what) {
  bool ok = j.is_number_unsigned() ? j.get<uint64_t>() <= INT32_MAX
                                   : j.is_number_integer() && j.get<int64_t>() >= 0 && j.get<int64_t>() <= INT32_MAX;
  if (!ok) fail("tokenizer: ", what, " has a bad id ", j.dump(), " (ids are integers from 0 to 2^31 - 1)");
  return static_cast<int32_t>(j.get<int64_t>());
}

int64_t tokenizer::integer_field(const Json& j, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return fallback;
  const Json& v = j[key];
  bool ok = v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(hi)
                                   : v.is_number_integer() && v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
  if (!ok) fail("tokenizer: field '", key, "' is ", v.dump(), "; expected an integer from ", lo, " to ", hi);
  return v.get<int64_t>();
}

namespace {

std::unordered_map<std::string, int32_t> read_vocab(const Json& v, const std::string& origin) {
  if (!v.is_object()) fail("tokenizer '", origin, "': model.vocab must be an object of token -> id");
  std::unordered_map<std::string, int32_t> vocab;
  for (const auto& [token, id] : v.items()) vocab[token] = tokenizer::token_id(id, "token '" + unicode::printable(token) + "' in '" + origin + "'");
  return vocab;
}

// Parses JSON, refusing nesting deeper than kMaxJsonDepth before any
// recursive code (component builders, copies) walks it.
Json parse_bounded(const std::string& json_text, const std::string& origin) {
  auto limit = [&](int depth, Json::parse_event_t, Json&) {
    if (depth > tokenizer::kMaxJsonDepth) {
      fail("tokenizer '", origin, "': JSON nested deeper than ", tokenizer::kMaxJsonDepth,
           " levels (a Sequence inside a Sequence ...); tokenizer.json files are never this deep");
    }
    return true;
  };
  try {
    return Json::parse(json_text, limit);
  } catch (const Json::exception& e) {
    fail("tokenizer '", origin, "': not valid JSON (", e.what(), ")");
  }
}

// A vocabulary-only model: the word is a token, or unk.
class WordLevel : public tokenizer::VocabModel {
 public:
  WordLevel(std::unordered_map<std::string, int32_t> vocab, std::string unk) : VocabModel(std::move(vocab)) {
    auto it = vocab_.find(unk);
    if (it != vocab_.end()) unk_ = it->second;
  }
  void tokenize(const std::string& word, std::vector<int32_t>& out) const override {
    auto it = vocab_.find(word);
    if (it != vocab_.end()) {
      out.push_back(it->second);
    } else if (unk_) {
      out.push_back(*unk_);
    } else {
      fail("tokenizer: '", unicode::printable(word), "' is not in the vocabulary and there is no unk token");
    }
  }

 private:
  std::optional<int32_t> unk_;
};

std::unique_ptr<tokenizer::Model> make_model(const Json& m, const std::string& origin) {
  std::string type = m.value("type", std::string("BPE"));
  if (type == "WordPiece") {
    return tokenizer::make_wordpiece(read_vocab(m.at("vocab"), origin), m.value("unk_token", std::string("[UNK]")),
                                     m.value("continuing_subword_prefix", std::string("##")),
                                     tokenizer::integer_field(m, "max_input_chars_per_word", 100, 0, INT32_MAX));
  }
  if (type == "BPE") {
    if (m.contains("dropout") && !m["dropout"].is_null() && m["dropout"].get<double>() > 0) {
      fail("tokenizer '", origin, "': BPE dropout is random; set it to null for inference");
    }
    std::vector<std::pair<std::string, std::string>> merges;
    for (const Json& merge : m.at("merges")) {
      if (merge.is_string()) {  // "a b"
        std::string s = merge.get<std::string>();
        size_t space = s.find(' ', 1);
        if (space == std::string::npos) fail("tokenizer '", origin, "': merge '", unicode::printable(s), "' is not two tokens");
        merges.emplace_back(s.substr(0, space), s.substr(space + 1));
      } else if (merge.is_array() && merge.size() == 2) {
        merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
      } else {
        fail("tokenizer '", origin, "': a merge must be \"a b\" or [a, b], got ", merge.dump());
      }
    }
    tokenizer::BpeOptions o;
    if (m.contains("unk_token") && m["unk_token"].is_string()) o.unk = m["unk_token"].get<std::string>();
    auto text = [&](const char* key) { return m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : std::string(); };
    o.continuing_subword_prefix = text("continuing_subword_prefix");
    o.end_of_word_suffix = text("end_of_word_suffix");
    o.byte_fallback = m.value("byte_fallback", false);
    o.fuse_unk = m.value("fuse_unk", false);
    o.ignore_merges = m.value("ignore_merges", false);
    return tokenizer::make_bpe(read_vocab(m.at("vocab"), origin), merges, o);
  }
  if (type == "WordLevel") return std::make_unique<WordLevel>(read_vocab(m.at("vocab"), origin), m.value("unk_token", std::string()));
  fail("tokenizer '", origin, "': model type '", unicode::printable(type), "' is not supported (WordPiece, BPE, WordLevel)");
}

}  // namespace

std::unique_ptr<Tokenizer> parse_tokenizer_json(const std::string& json_text, const std::string& origin) {
  Json j = parse_bounded(json_text, origin);
  try {
    if (!j.is_object() || !j.contains("model")) fail("tokenizer '", origin, "': expected an object with a 'model'");
    auto t = std::make_unique<tokenizer::PipelineTokenizer>();
    t->model = make_model(j.at("model"), origin);
    t->normalizer = tokenizer::make_normalizer(j.value("normalizer", Json()));
    t->pre_tokenizer = tokenizer::make_pre_tokenizer(j.value("pre_tokenizer", Json()));
    t->decoder = tokenizer::make_decoder(j.value("decoder", Json()));
    t->post = tokenizer::make_post_processor(j.value("post_processor", Json()), *t->model);
    for (const Json& a : j.value("added_tokens", Json::array())) {
      tokenizer::AddedToken at;
      at.content = a.at("content").get<std::string>();
      at.id = tokenizer::token_id(a.at("id"), "added token '" + unicode::printable(at.content) + "' in '" + origin + "'");
      at.special = a.value("special", false);
      at.normalized = a.value("normalized", !at.special);
      at.lstrip = a.value("lstrip", false);
      at.rstrip = a.value("rstrip", false);
      at.single_word = a.value("single_word", false);
      t->added.push_back(std::move(at));
    }
    const Json& trunc = j.value("truncation", Json());
    if (trunc.is_object() && trunc.contains("max_length")) {
      t->max_length_ = tokenizer::integer_field(trunc, "max_length", 0, 0, INT64_MAX);
    }
    const Json& pad = j.value("padding", Json());
    if (pad.is_object() && pad.contains("pad_id")) t->pad_ = tokenizer::token_id(pad["pad_id"], "padding.pad_id in '" + origin + "'");
    return t;
  } catch (const Json::exception& e) {
    fail("tokenizer '", origin, "': a field has the wrong type or is missing (", e.what(), ")");
  }
}

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path) {
  return parse_tokenizer_json(read_text_file(path, "tokenizer"), path);
}

}  // namespace lumen::io
