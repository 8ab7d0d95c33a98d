// ChatSession — a conversation with a Llama-family model: the history is kept,
// each turn renders the model's own chat template over the whole history,
// generates the assistant's reply and stops at an end-of-turn token.
//
// Which tokens end a turn follows llama.cpp: the vocabulary's eos, eot and
// eom ids, and any token whose text is a known end-of-generation marker
// (`<|im_end|>`, `<|eot_id|>`, `<|end|>`, `<end_of_turn>`, ...).
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lumen/io/chat_template.h"
#include "lumen/io/tokenizer/tokenizer.h"
#include "lumen/models/llama_runner.h"

namespace lumen::io {
class GgufFile;
}

namespace lumen::models {

// What a model file says about chatting.
struct ChatFormat {
  std::string template_source;  // empty: the model has no chat template
  std::string bos_token, eos_token;
  std::set<int32_t> end_of_turn;
};

// From a GGUF file's tokenizer.chat_template and tokenizer.ggml.* ids.
ChatFormat chat_format_from_gguf(const io::GgufFile& file, const io::Tokenizer& tokenizer);
// From a Hugging Face directory's tokenizer_config.json (and config.json's eos ids).
ChatFormat chat_format_from_directory(const std::string& directory, const io::Tokenizer& tokenizer);

// The tokenizer and chat format stored with a model: a GGUF file or a Hugging
// Face directory (tokenizer.json, tokenizer_config.json).
struct ChatAssets {
  std::unique_ptr<io::Tokenizer> tokenizer;
  ChatFormat format;
};
ChatAssets chat_assets(const std::string& model_path);

struct ChatReply {
  std::string text;
  std::vector<int32_t> tokens;
  GenerationStats stats;
  bool ended_turn = false;  // false: stopped at max_new_tokens or the cache's capacity
};

class ChatSession {
 public:
  // Throws lumen::Error if the format has no template or no end-of-turn token.
  ChatSession(LlamaRunner& runner, const io::Tokenizer& tokenizer, const ChatFormat& format);

  void set_system(const std::string& text);  // a system message before the history ("" removes it)
  // Adds the user's message, generates the reply (calling on_text with each
  // new piece of text as it is decoded) and adds it to the history.
  ChatReply reply(const std::string& user_message, int64_t max_new_tokens, Sampler& sampler,
                  const std::function<void(const std::string&)>& on_text = {});
  // The reply to a whole conversation given by the caller (the session's
  // history and system message are not used or changed).
  ChatReply respond(const std::vector<io::ChatMessage>& messages, int64_t max_new_tokens, Sampler& sampler,
                    const std::function<void(const std::string&)>& on_text = {});
  void reset();  // forgets the history (the system message stays)
  const std::vector<io::ChatMessage>& history() const { return history_; }
  // The prompt text the template makes of the history (+ the generation prompt).
  std::string prompt() const;

 private:
  LlamaRunner& runner_;
  const io::Tokenizer& tokenizer_;
  ChatFormat format_;
  io::ChatTemplate template_;
  std::string system_;
  std::vector<io::ChatMessage> history_;
};

}  // namespace lumen::models
