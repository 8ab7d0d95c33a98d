#include "lumen/models/chat_session.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lumen/core/error.h"
#include "lumen/io/gguf.h"

namespace lumen::models {

namespace {

// Texts llama.cpp treats as the end of a generation when the vocabulary has them.
constexpr const char* kEndOfGenerationTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>",
};

void add_known_end_tokens(const io::Tokenizer& tokenizer, std::set<int32_t>* ids) {
  for (const char* text : kEndOfGenerationTexts) {
    if (auto id = tokenizer.token_to_id(text)) ids->insert(*id);
  }
}

std::string token_text(const io::Tokenizer& tokenizer, int64_t id) {
  if (id < 0 || id >= tokenizer.vocab_size()) return "";
  return tokenizer.id_to_token(static_cast<int32_t>(id));
}

// tokenizer_config.json's special tokens are strings or {"content": ...}.
std::string special_token(const nlohmann::json& config, const char* key) {
  if (!config.contains(key)) return "";
  const nlohmann::json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

// "chat_template" is a string, or a list of {"name", "template"} (the "default" one is used).
std::string default_template(const nlohmann::json& config, const std::string& origin) {
  if (!config.contains("chat_template")) return "";
  const nlohmann::json& t = config["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array()) {
    for (const nlohmann::json& item : t) {
      if (item.is_object() && item.value("name", "") == "default" && item.contains("template") && item["template"].is_string()) {
        return item["template"].get<std::string>();
      }
    }
  }
  fail("'", origin, "': chat_template is neither a string nor a list holding a template named 'default'");
}

}  // namespace

ChatFormat chat_format_from_gguf(const io::GgufFile& file, const io::Tokenizer& tokenizer) {
  ChatFormat f;
  if (file.has("tokenizer.chat_template")) f.template_source = file.at("tokenizer.chat_template").as_string("tokenizer.chat_template");
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    if (file.has(key)) f.end_of_turn.insert(static_cast<int32_t>(file.at(key).as_int(key)));
  }
  if (file.has("tokenizer.ggml.bos_token_id")) f.bos_token = token_text(tokenizer, file.at("tokenizer.ggml.bos_token_id").as_int("bos"));
  if (file.has("tokenizer.ggml.eos_token_id")) f.eos_token = token_text(tokenizer, file.at("tokenizer.ggml.eos_token_id").as_int("eos"));
  add_known_end_tokens(tokenizer, &f.end_of_turn);
  return f;
}

ChatFormat chat_format_from_directory(const std::string& directory, const io::Tokenizer& tokenizer) {
  namespace fs = std::filesystem;
  ChatFormat f;
  fs::path path = fs::path(directory) / "tokenizer_config.json";
  std::ifstream in(path);
  if (in) {
    nlohmann::json config;
    try {
      config = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      fail("'", path.string(), "' is not valid JSON (", e.what(), ")");
    }
    f.template_source = default_template(config, path.string());
    f.bos_token = special_token(config, "bos_token");
    f.eos_token = special_token(config, "eos_token");
    if (auto id = tokenizer.token_to_id(f.eos_token); id && !f.eos_token.empty()) f.end_of_turn.insert(*id);
  }
  add_known_end_tokens(tokenizer, &f.end_of_turn);
  return f;
}

ChatAssets chat_assets(const std::string& model_path) {
  namespace fs = std::filesystem;
  ChatAssets a;
  if (fs::is_regular_file(model_path)) {
    io::GgufFile file = io::GgufFile::open(model_path);
    if (!file.has("tokenizer.ggml.tokens")) fail("chat: '", model_path, "' carries no vocabulary (tokenizer.ggml.tokens)");
    a.tokenizer = io::tokenizer_from_gguf(file);
    a.format = chat_format_from_gguf(file, *a.tokenizer);
    return a;
  }
  fs::path json = fs::path(model_path) / "tokenizer.json";
  if (!fs::exists(json)) fail("chat: '", model_path, "' is neither a GGUF file nor a directory with tokenizer.json");
  a.tokenizer = io::load_tokenizer_json(json.string());
  a.format = chat_format_from_directory(model_path, *a.tokenizer);
  return a;
}

ChatSession::ChatSession(LlamaRunner& runner, const io::Tokenizer& tokenizer, const ChatFormat& format)
    : runner_(runner),
      tokenizer_(tokenizer),
      format_(format),
      template_(format.template_source.empty()
                    ? (fail("chat: the model carries no chat template (tokenizer.chat_template); use `lumen generate` "
                            "with a prompt written in the model's format"),
                       std::string())
                    : format.template_source,
                format.bos_token, format.eos_token) {
  if (format_.end_of_turn.empty()) fail("chat: the model names no end-of-turn token (eos, eot or a known marker)");
}

void ChatSession::set_system(const std::string& text) { system_ = text; }

void ChatSession::reset() { history_.clear(); }

std::string ChatSession::prompt() const {
  std::vector<io::ChatMessage> messages;
  if (!system_.empty()) messages.push_back({"system", system_});
  messages.insert(messages.end(), history_.begin(), history_.end());
  return template_.render(messages, true);
}

ChatReply ChatSession::reply(const std::string& user_message, int64_t max_new_tokens, Sampler& sampler,
                             const std::function<void(const std::string&)>& on_text) {
  std::vector<io::ChatMessage> messages;
  if (!system_.empty()) messages.push_back({"system", system_});
  messages.insert(messages.end(), history_.begin(), history_.end());
  messages.push_back({"user", user_message});
  ChatReply r = respond(messages, max_new_tokens, sampler, on_text);
  history_.push_back({"user", user_message});
  history_.push_back({"assistant", r.text});
  return r;
}

ChatReply ChatSession::respond(const std::vector<io::ChatMessage>& messages, int64_t max_new_tokens, Sampler& sampler,
                               const std::function<void(const std::string&)>& on_text) {
  std::vector<int32_t> prompt_ids = tokenizer_.encode(template_.render(messages, true), true);
  if (static_cast<int64_t>(prompt_ids.size()) >= runner_.capacity()) {
    fail("chat: the conversation is ", prompt_ids.size(), " tokens, the KV cache holds ", runner_.capacity(),
         "; reset the history or raise the capacity");
  }
  ChatReply r;
  std::string shown;
  runner_.reset();  // the whole conversation is prefilled again: a fresh sequence
  runner_.generate(prompt_ids, max_new_tokens, sampler, [&](int32_t t) {
    if (format_.end_of_turn.count(t)) {
      r.ended_turn = true;
      return false;
    }
    r.tokens.push_back(t);
    std::string text = tokenizer_.decode(r.tokens, true);
    if (text.size() > shown.size() && text.compare(0, shown.size(), shown) == 0) {
      if (on_text) on_text(text.substr(shown.size()));
      shown = text;
    }
    return true;
  }, &r.stats);
  r.text = tokenizer_.decode(r.tokens, true);
  if (on_text && r.text.size() > shown.size()) on_text(r.text.substr(shown.size()));
  return r;
}

}  // namespace lumen::models
