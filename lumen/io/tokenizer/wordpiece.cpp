// WordPiece (BERT): greedy longest-match-first pieces, continuations marked
// with a prefix ("##"); a word with an unmatchable part is one [UNK].
#include "lumen/core/error.h"
#include "lumen/io/tokenizer/pipeline.h"
#include "lumen/io/tokenizer/unicode.h"

namespace lumen::io::tokenizer {

namespace {

class WordPiece : public VocabModel {
 public:
  WordPiece(std::unordered_map<std::string, int32_t> vocab, std::string unk, std::string prefix, int64_t max_chars)
      : VocabModel(std::move(vocab)), prefix_(std::move(prefix)), max_chars_(max_chars) {
    auto it = vocab_.find(unk);
    if (it == vocab_.end()) fail("tokenizer: WordPiece unk token '", unicode::printable(unk), "' is not in the vocabulary");
    unk_ = it->second;
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

 private:
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
