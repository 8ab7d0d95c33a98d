// The stages of a Hugging Face tokenizer pipeline, as lumen implements them:
// added tokens are split out first, the rest is normalized, pre-tokenized
// into words, each word is tokenized by the model, the post-processor adds
// special tokens; decoding runs the decoder over the token strings.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "lumen/io/tokenizer/tokenizer.h"

namespace lumen::io::tokenizer {

using Normalizer = std::function<std::string(const std::string&)>;
using PreTokenizer = std::function<std::vector<std::string>(const std::vector<std::string>&)>;
using Decoder = std::function<std::vector<std::string>(const std::vector<std::string>&)>;  // tokens -> pieces

// A vocabulary-based model: one word (after pre-tokenization) -> ids.
class Model {
 public:
  virtual ~Model() = default;
  virtual void tokenize(const std::string& word, std::vector<int32_t>& out) const = 0;
  virtual std::optional<int32_t> token_to_id(const std::string& token) const = 0;
  virtual const std::string* id_to_token(int32_t id) const = 0;
  virtual int64_t size() const = 0;
};

// A model over a token -> id table (BPE, WordPiece, WordLevel): the lookups
// every such model answers the same way. Negative ids are an error.
class VocabModel : public Model {
 public:
  explicit VocabModel(std::unordered_map<std::string, int32_t> vocab);
  std::optional<int32_t> token_to_id(const std::string& token) const override;
  const std::string* id_to_token(int32_t id) const override;
  int64_t size() const override { return static_cast<int64_t>(vocab_.size()); }

 protected:
  std::unordered_map<std::string, int32_t> vocab_;

 private:
  std::unordered_map<int32_t, const std::string*> by_id_;
};

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false, normalized = false, lstrip = false, rstrip = false, single_word = false;
};

// Adds special tokens around a sequence of ids.
struct PostProcessor {
  std::vector<int32_t> prefix, suffix;
};

class PipelineTokenizer : public Tokenizer {
 public:
  std::vector<int32_t> encode(const std::string& text, bool add_special_tokens = true, bool parse_special = true) const override;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = true) const override;
  std::string decode_strict(const std::vector<int32_t>& ids, bool skip_special_tokens = true) const override;
  int64_t vocab_size() const override;
  std::optional<int32_t> token_to_id(const std::string& token) const override;
  std::string id_to_token(int32_t id) const override;
  std::optional<int32_t> pad_id() const override { return pad_; }
  std::optional<int64_t> max_length() const override { return max_length_; }
  void set_max_length(std::optional<int64_t> max_length) override { max_length_ = max_length; }

  Normalizer normalizer;        // may be empty
  PreTokenizer pre_tokenizer;   // may be empty: the text is one word
  std::unique_ptr<Model> model;
  PostProcessor post;
  Decoder decoder;              // may be empty: tokens are concatenated
  std::vector<AddedToken> added;
  // Splits raw text around added tokens (pieces with id >= 0 are tokens);
  // empty: Hugging Face's rules (split_added) over the unnormalized `added`.
  std::function<std::vector<std::pair<std::string, int32_t>>(const std::string& text, bool parse_special)> split_special;
  bool added_tokens_verbatim = false;  // decode writes added tokens as they are, not through the decoder (llama.cpp)
  std::optional<int32_t> pad_;
  std::optional<int64_t> max_length_;

 private:
  void encode_segment(const std::string& text, bool parse_special, std::vector<int32_t>& out) const;
  std::string decode_ids(const std::vector<int32_t>& ids, bool skip_special_tokens, bool strict) const;
};

// Splits `text` around the added tokens that match it (longest first),
// honouring lstrip/rstrip/single_word. Segments with id >= 0 are tokens.
std::vector<std::pair<std::string, int32_t>> split_added(const std::string& text, const std::vector<const AddedToken*>& tokens);

// ---- components (defined in their own files) ----
std::unique_ptr<Model> make_wordpiece(std::unordered_map<std::string, int32_t> vocab, std::string unk, std::string prefix,
                                      int64_t max_chars);
struct BpeOptions {
  std::optional<std::string> unk;
  std::string continuing_subword_prefix, end_of_word_suffix;
  bool byte_fallback = false, fuse_unk = false, ignore_merges = false;
};
std::unique_ptr<Model> make_bpe(std::unordered_map<std::string, int32_t> vocab,
                                const std::vector<std::pair<std::string, std::string>>& merges, const BpeOptions& options);
// SentencePiece-style: merge the adjacent pair whose joined piece has the best score (llama.cpp's "llama" vocabularies).
std::unique_ptr<Model> make_score_bpe(std::vector<std::string> pieces, std::vector<float> scores, std::vector<int32_t> types);

// The GPT-2 byte <-> character mapping of byte-level BPE.
const std::string& byte_to_char(unsigned char b);
std::optional<unsigned char> char_to_byte(char32_t c);

// Regex splitting (PCRE2, Unicode) with Hugging Face's Split behaviours.
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
std::vector<std::string> split_regex(const std::string& text, const std::string& pattern, SplitBehavior behavior, bool invert);
std::string replace_regex(const std::string& text, const std::string& pattern, const std::string& content);

}  // namespace lumen::io::tokenizer
