#include "lumen/core/error.h"
#include "lumen/io/tokenizer/pipeline.h"
#include "lumen/io/tokenizer/unicode.h"

namespace lumen::io::tokenizer {

VocabModel::VocabModel(std::unordered_map<std::string, int32_t> vocab) : vocab_(std::move(vocab)) {
  for (const auto& [t, id] : vocab_) {
    if (id < 0) fail("tokenizer: token '", unicode::printable(t), "' has negative id ", id);
    by_id_.emplace(id, &t);  // a map: ids may be sparse (2^31 - 1 must not allocate 2^31 slots)
  }
}

std::optional<int32_t> VocabModel::token_to_id(const std::string& token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* VocabModel::id_to_token(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

}  // namespace lumen::io::tokenizer
