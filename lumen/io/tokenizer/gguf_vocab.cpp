// Tokenizers from a GGUF file's vocabulary, as llama.cpp builds them.
#include "lumen/core/error.h"
#include "lumen/io/gguf.h"
#include "lumen/io/tokenizer/components.h"

namespace lumen::io {

namespace {

std::vector<std::string> strings(const GgufFile& f, const std::string& key) {
  std::vector<std::string> out;
  for (const GgufValue& v : f.at(key).array) out.push_back(v.as_string(key));
  return out;
}

// Regexes of llama.cpp's pre-tokenizer names (tokenizer.ggml.pre).
std::string pre_pattern(const std::string& pre) {
  if (pre.empty() || pre == "default" || pre == "gpt2" || pre == "gpt-2") return tokenizer::kGpt2Pattern;
  if (pre == "llama3" || pre == "llama-bpe" || pre == "qwen2" || pre == "smollm") {
    return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  }
  fail("tokenizer: GGUF pre-tokenizer '", pre, "' is not supported (gpt2, llama3, qwen2)");
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& f) {
  std::string model = f.has("tokenizer.ggml.model") ? f.at("tokenizer.ggml.model").as_string("tokenizer.ggml.model") : "";
  std::vector<std::string> tokens = strings(f, "tokenizer.ggml.tokens");
  std::vector<int32_t> types;
  if (f.has("tokenizer.ggml.token_type")) {
    for (const GgufValue& v : f.at("tokenizer.ggml.token_type").array) types.push_back(static_cast<int32_t>(v.as_int("token_type")));
  }
  auto t = std::make_unique<tokenizer::PipelineTokenizer>();
  auto special = [&](const char* key) -> std::optional<int32_t> {
    if (!f.has(key)) return std::nullopt;
    int64_t id = f.at(key).as_int(key);
    if (id < 0 || id >= static_cast<int64_t>(tokens.size())) return std::nullopt;
    return static_cast<int32_t>(id);
  };
  // Control tokens (type 3) are special: matched in the text, skipped when decoding.
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] == 3 || types[i] == 4) {
      tokenizer::AddedToken a;
      a.content = tokens[i];
      a.id = static_cast<int32_t>(i);
      a.special = types[i] == 3;
      t->added.push_back(a);
    }
  }
  auto flag = [&](const char* key, bool fallback) { return f.has(key) ? f.at(key).as_bool(key) : fallback; };
  if (model == "llama") {
    std::vector<float> scores;
    for (const GgufValue& v : f.at("tokenizer.ggml.scores").array) scores.push_back(static_cast<float>(v.as_double("scores")));
    t->model = tokenizer::make_score_bpe(tokens, scores, types);
    bool space = flag("tokenizer.ggml.add_space_prefix", true);
    t->normalizer = [space](const std::string& s) {
      std::string out = space ? " " + s : s;
      std::string r;
      for (char c : out) r += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
      return r;
    };
    t->decoder = tokenizer::make_decoder(tokenizer::Json::parse(R"({"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})"));
    if (!space) t->decoder = tokenizer::make_decoder(tokenizer::Json::parse(R"({"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}]})"));
    if (flag("tokenizer.ggml.add_bos_token", true)) {
      if (auto bos = special("tokenizer.ggml.bos_token_id")) t->post.prefix.push_back(*bos);
    }
  } else if (model == "gpt2") {
    std::unordered_map<std::string, int32_t> vocab;
    for (size_t i = 0; i < tokens.size(); ++i) vocab.emplace(tokens[i], static_cast<int32_t>(i));
    std::vector<std::pair<std::string, std::string>> merges;
    for (const std::string& m : strings(f, "tokenizer.ggml.merges")) {
      size_t space = m.find(' ', 1);
      if (space == std::string::npos) fail("tokenizer: GGUF merge '", m, "' is not two tokens");
      merges.emplace_back(m.substr(0, space), m.substr(space + 1));
    }
    t->model = tokenizer::make_bpe(std::move(vocab), merges, {});
    std::string pattern = pre_pattern(f.has("tokenizer.ggml.pre") ? f.at("tokenizer.ggml.pre").as_string("pre") : "");
    t->pre_tokenizer = [pattern](const std::vector<std::string>& pieces) {
      std::vector<std::string> out;
      for (const std::string& p : pieces) {
        for (const std::string& w : tokenizer::split_regex(p, pattern, tokenizer::SplitBehavior::Isolated, false)) {
          std::string mapped;
          for (unsigned char b : w) mapped += tokenizer::byte_to_char(b);
          if (!mapped.empty()) out.push_back(mapped);
        }
      }
      return out;
    };
    t->decoder = tokenizer::make_decoder(tokenizer::Json::parse(R"({"type": "ByteLevel"})"));
    if (flag("tokenizer.ggml.add_bos_token", false)) {
      if (auto bos = special("tokenizer.ggml.bos_token_id")) t->post.prefix.push_back(*bos);
    }
  } else {
    fail("tokenizer: GGUF tokenizer model '", model, "' is not supported (llama, gpt2)");
  }
  if (auto pad = special("tokenizer.ggml.padding_token_id")) t->pad_ = pad;
  return t;
}

}  // namespace lumen::io
