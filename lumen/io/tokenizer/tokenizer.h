// Tokenizer — text to token ids and back, as Hugging Face `tokenizers` does
// it for the same tokenizer.json (WordPiece for BERT, BPE for GPT-2, Llama,
// Mistral and Qwen style vocabularies, byte-level or SentencePiece-like), or
// as llama.cpp does for a GGUF file's vocabulary.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lumen::io {

class GgufFile;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids for `text`; with `add_special_tokens`, the model's template
  // (e.g. [CLS] ... [SEP], or a BOS token) is applied, and truncation to
  // `max_length()` when the tokenizer defines one. With `parse_special`,
  // special tokens written in the text (`<|im_start|>`) become their ids, as
  // Hugging Face tokenizers do by default and llama.cpp with parse_special;
  // without it they are tokenized as text (tokens that are not special, such
  // as GGUF user-defined ones, are always matched).
  virtual std::vector<int32_t> encode(const std::string& text, bool add_special_tokens = true,
                                      bool parse_special = true) const = 0;
  // Text for `ids`. Ids the tokenizer does not know (a model's vocabulary is
  // often padded beyond its tokenizer's) are skipped, as Hugging Face does;
  // decode_strict throws lumen::Error naming the first one instead.
  virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = true) const = 0;
  virtual std::string decode_strict(const std::vector<int32_t>& ids, bool skip_special_tokens = true) const = 0;

  virtual int64_t vocab_size() const = 0;
  virtual std::optional<int32_t> token_to_id(const std::string& token) const = 0;
  virtual std::string id_to_token(int32_t id) const = 0;  // throws for ids outside the vocabulary
  virtual std::optional<int32_t> pad_id() const { return std::nullopt; }
  virtual std::optional<int64_t> max_length() const { return std::nullopt; }
  // Truncation when special tokens are added (nothing: none).
  virtual void set_max_length(std::optional<int64_t> max_length) = 0;
};

// tokenizer.json (Hugging Face tokenizers). Throws lumen::Error naming the
// unsupported component or the malformed field.
std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path);
std::unique_ptr<Tokenizer> parse_tokenizer_json(const std::string& json_text, const std::string& origin = "tokenizer.json");

// The vocabulary stored in a GGUF file (tokenizer.ggml.*): "llama"
// (SentencePiece scores with byte fallback) or "gpt2" (byte-level BPE, split
// by the rules llama.cpp has for tokenizer.ggml.pre), giving llama.cpp's ids:
// its special tokens, BOS/EOS defaults and parse_special. Malformed or
// unknown metadata is a lumen::Error naming the key.
std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& file);

}  // namespace lumen::io
