// Tokenizers from a GGUF file's vocabulary, as llama.cpp builds them: the
// same token attributes, special-token splitting, pre-tokenizer and BOS rules.
#include <algorithm>

#include "lumen/core/error.h"
#include "lumen/io/gguf.h"
#include "lumen/io/tokenizer/components.h"
#include "lumen/io/tokenizer/llama_split.h"
#include "lumen/io/tokenizer/unicode.h"

namespace lumen::io {

namespace {

using tokenizer::AddedToken;

// llama.cpp's token types (tokenizer.ggml.token_type).
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

const GgufValue& array_of(const GgufFile& f, const std::string& key) {
  const GgufValue& v = f.at(key);
  if (!v.is_array) fail("tokenizer: GGUF metadata '", key, "' must be an array");
  return v;
}

std::vector<std::string> strings(const GgufFile& f, const std::string& key) {
  std::vector<std::string> out;
  for (const GgufValue& v : array_of(f, key).array) out.push_back(v.as_string(key));
  return out;
}

// An optional per-token array: empty when absent, else exactly one entry a token.
template <typename T, typename Read>
std::vector<T> per_token(const GgufFile& f, const std::string& key, size_t n_tokens, Read read) {
  std::vector<T> out;
  if (!f.has(key)) return out;
  for (const GgufValue& v : array_of(f, key).array) out.push_back(read(v));
  if (out.size() != n_tokens) {
    fail("tokenizer: GGUF metadata '", key, "' has ", out.size(), " entries for ", n_tokens,
         " tokens (tokenizer.ggml.tokens); the file is inconsistent");
  }
  return out;
}

bool flag(const GgufFile& f, const std::string& key, bool fallback) { return f.has(key) ? f.at(key).as_bool(key) : fallback; }

// llama.cpp marks tokens that look like control tokens as control tokens
// whatever their stored type (end-of-generation and fill-in-the-middle markers).
const char* const kEndOfGeneration[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>",
    "<eos>", "<turn|>", "<|tool_response>", "<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C>", "[e~["};
struct FimMarkers {
  std::vector<std::string> keys;  // a file naming the token by any of these keys overrides the text match
  std::vector<std::string> texts;
};
const std::vector<FimMarkers>& fim_markers() {
  static const std::vector<FimMarkers> m = {
      {{"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id"},
       {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<PRE>",
        "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"}},
      {{"tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id"},
       {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>", "<SUF>",
        "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"}},
      {{"tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id"},
       {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", "<MID>",
        "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"}},
      {{"tokenizer.ggml.fim_pad_token_id"}, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
      {{"tokenizer.ggml.fim_rep_token_id"}, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
      {{"tokenizer.ggml.fim_sep_token_id"}, {"<|file_sep|>"}},
  };
  return m;
}

void apply_llama_type_overrides(const GgufFile& f, const std::vector<std::string>& tokens, std::vector<int32_t>& types) {
  auto find = [&](const std::string& text) -> int64_t {
    auto it = std::find(tokens.begin(), tokens.end(), text);
    return it == tokens.end() ? -1 : it - tokens.begin();
  };
  for (const char* text : kEndOfGeneration) {
    if (int64_t i = find(text); i >= 0) types[static_cast<size_t>(i)] = kControl;
  }
  for (const FimMarkers& m : fim_markers()) {
    if (std::any_of(m.keys.begin(), m.keys.end(), [&](const std::string& k) { return f.has(k); })) continue;
    int64_t first = -1;
    for (const std::string& text : m.texts) {
      int64_t i = find(text);
      if (i >= 0 && (first < 0 || i < first)) first = i;
    }
    if (first >= 0) types[static_cast<size_t>(first)] = kControl;
  }
  for (const char* text : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
    if (int64_t i = find(text); i >= 0) types[static_cast<size_t>(i)] = kUserDefined;
  }
  // Harmony-style vocabularies: <|end|> is not an end of generation there; with <|tool_response>, </s> is text.
  if (find("<|return|>") >= 0 && find("<|call|>") >= 0 && find("<|end|>") >= 0) types[static_cast<size_t>(find("<|end|>"))] = kUserDefined;
  if (find("<|flush|>") >= 0 && find("<|calls|>") >= 0 && find("<|end|>") >= 0) types[static_cast<size_t>(find("<|end|>"))] = kUserDefined;
  if (find("<|tool_response>") >= 0 && find("</s>") >= 0) types[static_cast<size_t>(find("</s>"))] = kNormal;
}

// Special tokens (control, user-defined, unknown) cut out of the text before
// tokenizing, as llama.cpp's tokenizer_st_partition does: each token in turn,
// longest first, splits every piece of text left by the previous ones.
struct SpecialSplitter {
  std::vector<AddedToken> specials;  // longest first; `special` marks control and unknown tokens

  std::vector<std::pair<std::string, int32_t>> operator()(const std::string& text, bool parse_special) const {
    std::vector<std::pair<std::string, int32_t>> pieces;
    if (!text.empty()) pieces.emplace_back(text, -1);
    for (const AddedToken& t : specials) {
      if (!parse_special && t.special) continue;  // user-defined tokens are split out even so, as in llama.cpp
      std::vector<std::pair<std::string, int32_t>> next;
      for (auto& [piece, id] : pieces) {
        if (id >= 0) {
          next.emplace_back(std::move(piece), id);
          continue;
        }
        auto space = [&text = piece](size_t i) { return std::string(" \t\n\v\f\r").find(text[i]) != std::string::npos; };
        size_t at = 0;
        for (size_t hit = piece.find(t.content); hit != std::string::npos; hit = piece.find(t.content, at)) {
          size_t left_end = hit;
          while (t.lstrip && left_end > at && space(left_end - 1)) --left_end;
          if (left_end > at) next.emplace_back(piece.substr(at, left_end - at), -1);
          next.emplace_back(t.content, t.id);
          at = hit + t.content.size();
          while (t.rstrip && at < piece.size() && space(at)) ++at;
        }
        if (at < piece.size()) next.emplace_back(piece.substr(at), -1);
      }
      pieces = std::move(next);
    }
    return pieces;
  }
};

std::string string_or_empty(const GgufFile& f, const std::string& key) {
  if (!f.has(key)) return "";
  const GgufValue& v = f.at(key);
  const std::string* s = v.is_array ? nullptr : std::get_if<std::string>(&v.scalar);
  return s ? *s : "";
}

std::string lowercase_ascii(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

struct Vocabulary {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;  // one a token (normal when the file has none)
};

Vocabulary read_vocabulary(const GgufFile& f) {
  Vocabulary v;
  if (!f.has("tokenizer.ggml.tokens")) fail("tokenizer: the GGUF file has no vocabulary (tokenizer.ggml.tokens)");
  v.tokens = strings(f, "tokenizer.ggml.tokens");
  if (v.tokens.empty()) fail("tokenizer: GGUF metadata 'tokenizer.ggml.tokens' is empty");
  if (v.tokens.size() > static_cast<size_t>(INT32_MAX)) fail("tokenizer: GGUF vocabulary of ", v.tokens.size(), " tokens is too large");
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.tokens[i].empty()) v.tokens[i] = "[EMPTY_" + std::to_string(i) + "]";  // as llama.cpp names them
  }
  std::unordered_map<std::string, size_t> seen;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    auto [it, fresh] = seen.emplace(v.tokens[i], i);
    if (!fresh) fail("tokenizer: GGUF vocabulary has token '", unicode::printable(v.tokens[i]), "' twice (ids ", it->second, " and ", i, ")");
  }
  v.types = per_token<int32_t>(f, "tokenizer.ggml.token_type", v.tokens.size(), [](const GgufValue& x) {
    int64_t t = x.as_int("tokenizer.ggml.token_type");
    return static_cast<int32_t>(std::clamp<int64_t>(t, -1, 7));
  });
  if (v.types.empty()) v.types.assign(v.tokens.size(), kNormal);
  apply_llama_type_overrides(f, v.tokens, v.types);
  return v;
}

// The id stored under `key`, else `fallback`; ids outside the vocabulary are ignored, as llama.cpp does.
std::optional<int32_t> special_id(const GgufFile& f, const char* key, std::optional<int32_t> fallback, size_t n_tokens) {
  if (fallback && static_cast<size_t>(*fallback) >= n_tokens) fallback.reset();
  if (!f.has(key)) return fallback;
  int64_t id = f.at(key).as_int(key);
  if (id < 0 || id >= static_cast<int64_t>(n_tokens)) return fallback;
  return static_cast<int32_t>(id);
}

// BOS and EOS around the text when special tokens are added: tokenizer.ggml.add_bos_token / add_eos_token,
// else llama.cpp's defaults for the vocabulary (`add_bos`; EOS never), with its default ids.
void add_bos_eos(tokenizer::PipelineTokenizer& t, const GgufFile& f, bool add_bos, std::optional<int32_t> bos,
                 std::optional<int32_t> eos, size_t n_tokens) {
  bos = special_id(f, "tokenizer.ggml.bos_token_id", bos, n_tokens);
  eos = special_id(f, "tokenizer.ggml.eos_token_id", eos, n_tokens);
  if (flag(f, "tokenizer.ggml.add_bos_token", add_bos)) {
    if (!bos) fail("tokenizer: tokenizer.ggml.add_bos_token is true but the vocabulary has no BOS token (tokenizer.ggml.bos_token_id)");
    t.post.prefix.push_back(*bos);
  }
  if (flag(f, "tokenizer.ggml.add_eos_token", false)) {
    if (!eos) fail("tokenizer: tokenizer.ggml.add_eos_token is true but the vocabulary has no EOS token (tokenizer.ggml.eos_token_id)");
    t.post.suffix.push_back(*eos);
  }
}

void build_llama(tokenizer::PipelineTokenizer& t, const GgufFile& f, const Vocabulary& v) {
  std::vector<float> scores = per_token<float>(f, "tokenizer.ggml.scores", v.tokens.size(),
                                               [](const GgufValue& x) { return static_cast<float>(x.as_double("tokenizer.ggml.scores")); });
  if (scores.empty()) scores.assign(v.tokens.size(), 0.0f);
  t.model = tokenizer::make_score_bpe(v.tokens, scores, v.types);
  bool space = flag(f, "tokenizer.ggml.add_space_prefix", true);
  t.normalizer = [space](const std::string& s) {
    std::string out = space ? " " + s : s;
    std::string r;
    for (char c : out) r += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    return r;
  };
  std::string steps = R"({"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"})";
  if (space) steps += R"(, {"type": "Strip", "content": " ", "start": 1, "stop": 0})";
  t.decoder = tokenizer::make_decoder(tokenizer::Json::parse(R"({"type": "Sequence", "decoders": [)" + steps + "]}"));
  add_bos_eos(t, f, true, 1, 2, v.tokens.size());
}

void build_gpt2(tokenizer::PipelineTokenizer& t, const GgufFile& f, const Vocabulary& v) {
  std::string pre = f.has("tokenizer.ggml.pre") ? f.at("tokenizer.ggml.pre").as_string("tokenizer.ggml.pre") : "";
  const tokenizer::GgufPreTokenizer& rules = tokenizer::gguf_pre_tokenizer(pre);
  std::unordered_map<std::string, int32_t> vocab;
  for (size_t i = 0; i < v.tokens.size(); ++i) vocab.emplace(v.tokens[i], static_cast<int32_t>(i));
  if (!f.has("tokenizer.ggml.merges")) fail("tokenizer: GGUF gpt2 vocabulary has no merges (tokenizer.ggml.merges)");
  std::vector<std::pair<std::string, std::string>> merges;
  for (const std::string& m : strings(f, "tokenizer.ggml.merges")) {
    size_t space = m.find(' ', 1);
    if (space == std::string::npos) fail("tokenizer: GGUF merge '", unicode::printable(m), "' is not two tokens separated by a space");
    merges.emplace_back(m.substr(0, space), m.substr(space + 1));
  }
  tokenizer::BpeOptions options;
  options.ignore_merges = rules.ignore_merges;
  t.model = tokenizer::make_bpe(std::move(vocab), merges, options);
  std::vector<std::string> regexes = rules.regexes;
  t.pre_tokenizer = [regexes](const std::vector<std::string>& pieces) {
    std::vector<std::string> out;
    for (const std::string& p : pieces) {
      for (const std::string& w : tokenizer::llama_regex_split(p, regexes)) {
        std::string mapped;
        for (unsigned char b : w) mapped += tokenizer::byte_to_char(b);
        out.push_back(std::move(mapped));
      }
    }
    return out;
  };
  t.decoder = tokenizer::make_decoder(tokenizer::Json::parse(R"({"type": "ByteLevel"})"));
  t.added_tokens_verbatim = true;  // llama.cpp writes control and user-defined tokens' text as it is
  add_bos_eos(t, f, rules.add_bos, rules.no_bos ? std::nullopt : std::optional<int32_t>(11), 11, v.tokens.size());
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& f) {
  std::string model = f.has("tokenizer.ggml.model") ? f.at("tokenizer.ggml.model").as_string("tokenizer.ggml.model") : "";
  if (model != "llama" && model != "gpt2") {
    fail("tokenizer: GGUF tokenizer model '", unicode::printable(model), "' (tokenizer.ggml.model) is not supported (llama, gpt2)");
  }
  Vocabulary v = read_vocabulary(f);
  auto t = std::make_unique<tokenizer::PipelineTokenizer>();
  SpecialSplitter splitter;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    int32_t type = v.types[i];
    if (type != kControl && type != kUserDefined && type != kUnknown) continue;
    AddedToken a;
    a.content = v.tokens[i];
    a.id = static_cast<int32_t>(i);
    a.special = type != kUserDefined;  // control and unknown tokens: parsed only on request, skipped when decoding
    t->added.push_back(a);
  }
  // Model-specific strip rules llama.cpp applies by name (general.name, tokenizer.ggml.pre).
  std::string name = lowercase_ascii(string_or_empty(f, "general.name"));
  std::string pre = string_or_empty(f, "tokenizer.ggml.pre");
  for (AddedToken& a : t->added) {
    if ((name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) &&
        a.content != "<unk>" && a.content != "<s>" && a.content != "<|endoftext|>") {
      a.rstrip = true;
    }
    if ((pre == "jina-v2-de" || pre == "jina-v2-es") && a.content == "<mask>") a.lstrip = true;
  }
  splitter.specials = t->added;
  std::stable_sort(splitter.specials.begin(), splitter.specials.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  t->split_special = splitter;
  if (model == "llama") {
    build_llama(*t, f, v);
  } else {
    build_gpt2(*t, f, v);
  }
  if (auto pad = special_id(f, "tokenizer.ggml.padding_token_id", std::nullopt, v.tokens.size())) t->pad_ = pad;
  return t;
}

}  // namespace lumen::io
