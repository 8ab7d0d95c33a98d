// WordPiece (BERT): greedy longest-match-first pieces, continuations marked
// with a prefix ("##"); a word with an unmatchable part is one [UNK].
#include "lumen/core/error.h"
#include "lumen/io/tokenizer/pipeline.h"
#include "lumen/io/tokenizer/unicode.h"

namespace lumen::io::tokenizer {

namespace {

class WordPiece : public Model {
 public:
  WordPiece(std::unordered_map<std::string, int32_t> vocab, std::string unk, std::string prefix, int64_t max_chars)
      : vocab_(std::move(vocab)), prefix_(std::move(prefix)), max_chars_(max_chars) {
    auto it = vocab_.find(unk);
    if (it == vocab_.end()) fail("tokenizer: WordPiece unk token '", unk, "' is not in the vocabulary");
    unk_ = it->second;
    for (const auto& [t, id] : vocab_) {
      if (id < 0) fail("tokenizer: token '", t, "' has negative id ", id);
      if (static_cast<size_t>(id) >= by_id_.size()) by_id_.resize(static_cast<size_t>(id) + 1, nullptr);
      by_id_[static_cast<size_t>(id)] = &t;
    }
  }

  void tokenize(const std::string& word, std::vector<int32_t>& out) const override {
    std::vector<char32_t> chars = unicode::decode(word);
    if (static_cast<int64_t>(chars.size()) > max_chars_) {
      out.push_back(unk_);
      return;
    }
    // Byte offsets of each character boundary.
    std::vector<size_t> at{0};
    for (char32_t c : chars) at.push_back(at.back() + unicode::encode(c).size());
    std::vector<int32_t> pieces;
    size_t start = 0;
    while (start < chars.size()) {
      size_t end = chars.size();
      int32_t found = -1;
      while (start < end) {
        std::string sub = word.substr(at[start], at[end] - at[start]);
        if (start > 0) sub = prefix_ + sub;
        auto it = vocab_.find(sub);
        if (it != vocab_.end()) {
          found = it->second;
          break;
        }
        --end;
      }
      if (found < 0) {
        out.push_back(unk_);
        return;
      }
      pieces.push_back(found);
      start = end;
    }
    out.insert(out.end(), pieces.begin(), pieces.end());
  }

  std::optional<int32_t> token_to_id(const std::string& token) const override {
    auto it = vocab_.find(token);
    if (it == vocab_.end()) return std::nullopt;
    return it->second;
  }
  const std::string* id_to_token(int32_t id) const override {
    return id >= 0 && static_cast<size_t>(id) < by_id_.size() ? by_id_[static_cast<size_t>(id)] : nullptr;
  }
  int64_t size() const override { return static_cast<int64_t>(vocab_.size()); }

 private:
  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<const std::string*> by_id_;
  std::string prefix_;
  int64_t max_chars_;
  int32_t unk_ = 0;
};

}  // namespace

std::unique_ptr<Model> make_wordpiece(std::unordered_map<std::string, int32_t> vocab, std::string unk, std::string prefix,
                                      int64_t max_chars) {
  return std::make_unique<WordPiece>(std::move(vocab), std::move(unk), std::move(prefix), max_chars);
}

}  // namespace lumen::io::tokenizer
