// ChatTemplate — a model's own chat template (GGUF `tokenizer.chat_template`,
// `tokenizer_config.json`'s `chat_template`), rendered by Jinja2, the
// reference Jinja implementation, with the environment Hugging Face's
// apply_chat_template uses (sandboxed, trim_blocks, lstrip_blocks,
// loop controls, `raise_exception`, `strftime_now`, `tojson`).
//
// C++ programs reach Jinja2 through an embedded CPython interpreter (started
// on first use when the process has none); inside Python (the lumen
// extension) the running interpreter is used. Templates are compiled once.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace lumen::io {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", ...
  std::string content;
};

class ChatTemplate {
 public:
  // Throws lumen::Error if the template does not parse (with Jinja's message).
  ChatTemplate(std::string source, std::string bos_token, std::string eos_token);
  ~ChatTemplate();
  ChatTemplate(const ChatTemplate&) = delete;
  ChatTemplate& operator=(const ChatTemplate&) = delete;

  // The prompt text for `messages`; with add_generation_prompt, ending where
  // the assistant's reply begins. Template errors (raise_exception, an
  // undefined name) are lumen::Errors.
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const;
  const std::string& source() const { return source_; }

 private:
  std::string source_, bos_, eos_;
  void* compiled_ = nullptr;  // the jinja2 Template (a PyObject*)
};

}  // namespace lumen::io
