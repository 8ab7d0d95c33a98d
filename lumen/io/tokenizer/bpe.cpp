// Byte-pair encoding. A word starts as its characters (or, with byte
// fallback, bytes for characters outside the vocabulary); adjacent pairs are
// merged by rank — the lowest-ranked pair first, leftmost on ties — until
// none is in the merge table. With scores instead of ranks (SentencePiece
// vocabularies as llama.cpp stores them), the best-scoring joined piece wins.
#include <cstdio>
#include <queue>

#include "lumen/core/error.h"
#include "lumen/io/tokenizer/pipeline.h"
#include "lumen/io/tokenizer/unicode.h"

namespace lumen::io::tokenizer {

namespace {

struct Symbol {
  std::string text;
  int32_t id;     // -1: not a vocabulary token (unknown)
  int prev, next;  // linked list over the word; -1 at the ends
  bool alive = true;
};

// A candidate merge of symbols left and right (left.next == right).
struct Candidate {
  double priority;  // lower merges first
  int left, right;
  std::string joined_left, joined_right;  // texts when proposed, to detect stale candidates
  bool operator>(const Candidate& o) const { return priority != o.priority ? priority > o.priority : left > o.left; }
};

// Runs the merges over `symbols`; `rank` gives a pair's priority (or nothing).
template <typename RankFn>
void merge_all(std::vector<Symbol>& symbols, RankFn rank, const std::unordered_map<std::string, int32_t>& vocab) {
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto propose = [&](int l) {
    if (l < 0) return;
    int r = symbols[static_cast<size_t>(l)].next;
    if (r < 0) return;
    const Symbol& a = symbols[static_cast<size_t>(l)];
    const Symbol& b = symbols[static_cast<size_t>(r)];
    if (auto p = rank(a, b)) queue.push({*p, l, r, a.text, b.text});
  };
  for (int i = 0; i + 1 < static_cast<int>(symbols.size()); ++i) propose(i);
  while (!queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    Symbol& a = symbols[static_cast<size_t>(c.left)];
    if (!a.alive || a.next != c.right) continue;
    Symbol& b = symbols[static_cast<size_t>(c.right)];
    if (!b.alive || a.text != c.joined_left || b.text != c.joined_right) continue;
    a.text += b.text;
    a.id = vocab.at(a.text);
    b.alive = false;
    a.next = b.next;
    if (b.next >= 0) symbols[static_cast<size_t>(b.next)].prev = c.left;
    propose(a.prev);
    propose(c.left);
  }
}

std::string byte_token(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

// The merging models (BPE by ranks, SentencePiece BPE by scores) start from the same symbols.
class SymbolModel : public VocabModel {
 public:
  using VocabModel::VocabModel;

 protected:
  // The word's initial symbols: characters in the vocabulary, else their
  // bytes as <0xXX> tokens (byte fallback), else unknown (id -1).
  std::vector<Symbol> initial(const std::string& word, const std::string& prefix, const std::string& suffix,
                              bool byte_fallback) const {
    std::vector<char32_t> chars = unicode::decode(word);
    std::vector<Symbol> out;
    auto push = [&](std::string text, int32_t id) {
      int i = static_cast<int>(out.size());
      out.push_back({std::move(text), id, i - 1, -1});
      if (i > 0) out[static_cast<size_t>(i - 1)].next = i;
    };
    for (size_t k = 0; k < chars.size(); ++k) {
      std::string c = unicode::encode(chars[k]);
      if (k > 0) c = prefix + c;
      if (k + 1 == chars.size()) c += suffix;
      auto it = vocab_.find(c);
      if (it != vocab_.end()) {
        push(c, it->second);
        continue;
      }
      std::string raw = unicode::encode(chars[k]);
      bool bytes_ok = byte_fallback;
      for (unsigned char b : raw) bytes_ok = bytes_ok && vocab_.count(byte_token(b));
      if (bytes_ok) {
        for (unsigned char b : raw) push("\x01" + byte_token(b), vocab_.at(byte_token(b)));  // \x01: never merges
      } else {
        push(c, -1);
      }
    }
    return out;
  }
};

class Bpe : public SymbolModel {
 public:
  Bpe(std::unordered_map<std::string, int32_t> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
      BpeOptions options)
      : SymbolModel(std::move(vocab)), options_(std::move(options)) {
    for (size_t r = 0; r < merges.size(); ++r) {
      const auto& [a, b] = merges[r];
      if (!vocab_.count(a + b)) fail("tokenizer: BPE merge '", unicode::printable(a + " " + b), "' makes '", unicode::printable(a + b), "', which is not in the vocabulary");
      ranks_.emplace(a + '\0' + b, static_cast<int32_t>(r));  // the first listing of a pair wins
    }
    if (options_.unk) {
      auto it = vocab_.find(*options_.unk);
      if (it != vocab_.end()) unk_ = it->second;
    }
  }

  void tokenize(const std::string& word, std::vector<int32_t>& out) const override {
    if (options_.ignore_merges) {
      auto it = vocab_.find(word);
      if (it != vocab_.end()) {
        out.push_back(it->second);
        return;
      }
    }
    std::vector<Symbol> symbols =
        initial(word, options_.continuing_subword_prefix, options_.end_of_word_suffix, options_.byte_fallback);
    merge_all(symbols, [&](const Symbol& a, const Symbol& b) -> std::optional<double> {
      if (a.id < 0 || b.id < 0) return std::nullopt;
      auto it = ranks_.find(a.text + '\0' + b.text);
      if (it == ranks_.end()) return std::nullopt;
      return static_cast<double>(it->second);
    }, vocab_);
    bool last_unknown = false;
    for (const Symbol& s : symbols) {
      if (!s.alive) continue;
      if (s.id >= 0) {
        out.push_back(s.id);
        last_unknown = false;
        continue;
      }
      if (!unk_) fail("tokenizer: '", unicode::printable(s.text), "' is not in the vocabulary and the BPE model has no unk token");
      if (!(options_.fuse_unk && last_unknown)) out.push_back(*unk_);
      last_unknown = true;
    }
  }

 private:
  BpeOptions options_;
  std::unordered_map<std::string, int32_t> ranks_;
  std::optional<int32_t> unk_;
};

// llama.cpp "llama" vocabularies: token types 1 normal, 2 unknown, 3 control,
// 4 user defined, 5 unused, 6 byte.
class ScoreBpe : public SymbolModel {
 public:
  ScoreBpe(std::unordered_map<std::string, int32_t> vocab, std::vector<float> scores, std::vector<int32_t> types)
      : SymbolModel(std::move(vocab)), scores_(std::move(scores)), types_(std::move(types)) {
    for (size_t i = 0; i < types_.size(); ++i) {
      if (types_[i] == 2) unk_ = static_cast<int32_t>(i);
    }
  }

  void tokenize(const std::string& word, std::vector<int32_t>& out) const override {
    std::vector<Symbol> symbols = initial(word, "", "", true);
    merge_all(symbols, [&](const Symbol& a, const Symbol& b) -> std::optional<double> {
      if (a.id < 0 || b.id < 0) return std::nullopt;
      auto it = vocab_.find(a.text + b.text);
      if (it == vocab_.end()) return std::nullopt;
      int32_t type = static_cast<size_t>(it->second) < types_.size() ? types_[static_cast<size_t>(it->second)] : 1;
      if (type != 1 && type != 4) return std::nullopt;  // merges only make normal (or user) pieces
      return -static_cast<double>(scores_[static_cast<size_t>(it->second)]);  // best score first
    }, vocab_);
    for (const Symbol& s : symbols) {
      if (!s.alive) continue;
      if (s.id >= 0) {
        out.push_back(s.id);
      } else if (unk_) {
        out.push_back(*unk_);
      } else {
        fail("tokenizer: '", unicode::printable(s.text), "' is not in the vocabulary, which has no byte tokens or unknown token");
      }
    }
  }

 private:
  std::vector<float> scores_;
  std::vector<int32_t> types_;
  std::optional<int32_t> unk_;
};

}  // namespace

std::unique_ptr<Model> make_bpe(std::unordered_map<std::string, int32_t> vocab,
                                const std::vector<std::pair<std::string, std::string>>& merges, const BpeOptions& options) {
  return std::make_unique<Bpe>(std::move(vocab), merges, options);
}

std::unique_ptr<Model> make_score_bpe(std::vector<std::string> pieces, std::vector<float> scores, std::vector<int32_t> types) {
  if (scores.size() != pieces.size()) fail("tokenizer: ", pieces.size(), " tokens but ", scores.size(), " scores");
  if (!types.empty() && types.size() != pieces.size()) fail("tokenizer: ", pieces.size(), " tokens but ", types.size(), " token types");
  std::unordered_map<std::string, int32_t> vocab;
  for (size_t i = 0; i < pieces.size(); ++i) vocab.emplace(pieces[i], static_cast<int32_t>(i));  // first wins on duplicates
  return std::make_unique<ScoreBpe>(std::move(vocab), std::move(scores), std::move(types));
}

}  // namespace lumen::io::tokenizer
