#include "lumen/io/tokenizer/pipeline.h"

#include <algorithm>

#include "lumen/core/error.h"
#include "lumen/io/tokenizer/unicode.h"

namespace lumen::io::tokenizer {

namespace {

bool is_word_byte(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

}  // namespace

std::vector<std::pair<std::string, int32_t>> split_added(const std::string& text, const std::vector<const AddedToken*>& tokens) {
  std::vector<std::pair<std::string, int32_t>> out;
  if (tokens.empty()) {
    out.emplace_back(text, -1);
    return out;
  }
  std::vector<const AddedToken*> sorted = tokens;
  std::stable_sort(sorted.begin(), sorted.end(), [](const AddedToken* a, const AddedToken* b) { return a->content.size() > b->content.size(); });
  size_t start = 0, i = 0;
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (i < text.size()) {
    const AddedToken* hit = nullptr;
    for (const AddedToken* t : sorted) {
      if (t->content.empty() || text.compare(i, t->content.size(), t->content) != 0) continue;
      if (t->single_word) {
        size_t end = i + t->content.size();
        bool left_ok = i == 0 || !is_word_byte(static_cast<unsigned char>(text[i - 1]));
        bool right_ok = end >= text.size() || !is_word_byte(static_cast<unsigned char>(text[end]));
        if (!left_ok || !right_ok) continue;
      }
      hit = t;
      break;
    }
    if (!hit) {
      ++i;
      continue;
    }
    size_t begin = i, end = i + hit->content.size();
    if (hit->lstrip) {
      while (begin > start && is_space(text[begin - 1])) --begin;
    }
    if (hit->rstrip) {
      while (end < text.size() && is_space(text[end])) ++end;
    }
    if (begin > start) out.emplace_back(text.substr(start, begin - start), -1);
    out.emplace_back(hit->content, hit->id);
    start = i = end;
  }
  if (start < text.size()) out.emplace_back(text.substr(start), -1);
  return out;
}

void PipelineTokenizer::encode_segment(const std::string& text, bool parse_special, std::vector<int32_t>& out) const {
  std::string normalized = normalizer ? normalizer(text) : text;
  std::vector<const AddedToken*> normalized_tokens;
  for (const AddedToken& t : added) {
    if (t.normalized && (parse_special || !t.special)) normalized_tokens.push_back(&t);
  }
  for (const auto& [piece, id] : split_added(normalized, normalized_tokens)) {
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    std::vector<std::string> words = pre_tokenizer ? pre_tokenizer({piece}) : std::vector<std::string>{piece};
    for (const std::string& w : words) {
      if (!w.empty()) model->tokenize(w, out);
    }
  }
}

std::vector<int32_t> PipelineTokenizer::encode(const std::string& text, bool add_special_tokens, bool parse_special) const {
  std::vector<std::pair<std::string, int32_t>> pieces;
  if (split_special) {
    pieces = split_special(text, parse_special);
  } else {
    std::vector<const AddedToken*> raw_tokens;
    for (const AddedToken& t : added) {
      if (!t.normalized && (parse_special || !t.special)) raw_tokens.push_back(&t);
    }
    pieces = split_added(text, raw_tokens);
  }
  std::vector<int32_t> ids;
  for (const auto& [piece, id] : pieces) {
    if (id >= 0) {
      ids.push_back(id);
    } else {
      encode_segment(piece, parse_special, ids);
    }
  }
  if (!add_special_tokens) return ids;
  if (max_length_) {
    int64_t room = *max_length_ - static_cast<int64_t>(post.prefix.size() + post.suffix.size());
    if (room < static_cast<int64_t>(ids.size())) ids.resize(static_cast<size_t>(std::max<int64_t>(room, 0)));
  }
  std::vector<int32_t> out = post.prefix;
  out.insert(out.end(), ids.begin(), ids.end());
  out.insert(out.end(), post.suffix.begin(), post.suffix.end());
  return out;
}

std::string PipelineTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  return decode_ids(ids, skip_special_tokens, false);
}

std::string PipelineTokenizer::decode_strict(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  return decode_ids(ids, skip_special_tokens, true);
}

std::string PipelineTokenizer::decode_ids(const std::vector<int32_t>& ids, bool skip_special_tokens, bool strict) const {
  std::unordered_map<int32_t, const AddedToken*> by_id;
  for (const AddedToken& t : added) by_id.emplace(t.id, &t);
  std::string out;
  std::vector<std::string> tokens;  // waiting for the decoder
  auto flush = [&] {
    for (const std::string& p : decoder ? decoder(tokens) : tokens) out += p;
    tokens.clear();
  };
  for (int32_t id : ids) {
    auto special = by_id.find(id);
    if (special != by_id.end()) {
      if (skip_special_tokens && special->second->special) continue;
      if (added_tokens_verbatim) {
        flush();
        out += special->second->content;
      } else {
        tokens.push_back(special->second->content);
      }
      continue;
    }
    const std::string* token = model->id_to_token(id);
    if (token) {
      tokens.push_back(*token);
    } else if (strict) {
      fail("tokenizer: cannot decode id ", id, ": it is outside the vocabulary of ", vocab_size(),
           " tokens (decode skips such ids; decode_strict refuses them)");
    }
  }
  flush();
  return unicode::encode(unicode::decode(out));  // valid UTF-8 (a token's bytes may be cut or damaged), as Hugging Face
}

int64_t PipelineTokenizer::vocab_size() const {
  int64_t n = model->size();
  for (const AddedToken& t : added) n = std::max<int64_t>(n, t.id + 1);
  return n;
}

std::optional<int32_t> PipelineTokenizer::token_to_id(const std::string& token) const {
  for (const AddedToken& t : added) {
    if (t.content == token) return t.id;
  }
  return model->token_to_id(token);
}

std::string PipelineTokenizer::id_to_token(int32_t id) const {
  for (const AddedToken& t : added) {
    if (t.id == id) return t.content;
  }
  const std::string* s = model->id_to_token(id);
  if (!s) fail("tokenizer: id ", id, " is outside the vocabulary of ", vocab_size(), " tokens");
  return *s;
}

}  // namespace lumen::io::tokenizer
