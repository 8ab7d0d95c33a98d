#include "lumen/core/error.h"
#include "lumen/io/tokenizer/pipeline.h"

namespace lumen::io::tokenizer {

VocabModel::VocabModel(std::unordered_map<std::string, int32_t> vocab) : vocab_(std::move(vocab)) {
  for (const auto& [t, id] : vocab_) {
    if (id < 0) fail("tokenizer: token '", t, "' has negative id ", id);
    if (static_cast<size_t>(id) >= by_id_.size()) by_id_.resize(static_cast<size_t>(id) + 1, nullptr);
    by_id_[static_cast<size_t>(id)] = &t;
  }
}

std::optional<int32_t> VocabModel::token_to_id(const std::string& token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* VocabModel::id_to_token(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < by_id_.size() ? by_id_[static_cast<size_t>(id)] : nullptr;
}

}  // namespace lumen::io::tokenizer
