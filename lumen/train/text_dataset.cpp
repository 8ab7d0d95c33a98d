#include "lumen/train/text_dataset.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "lumen/core/error.h"

namespace lumen::train {

TextDataset::TextDataset(const std::string& text, int64_t context, std::string what, double validation_fraction)
    : what_(std::move(what)), context_(context) {
  if (context < 1) fail("TextDataset: the context must be positive, got ", context);
  if (!(validation_fraction > 0 && validation_fraction < 1)) {
    fail("TextDataset: the validation fraction must be in (0, 1), got ", validation_fraction);
  }
  bool seen[256] = {};
  for (unsigned char ch : text) seen[ch] = true;
  std::fill(std::begin(index_), std::end(index_), -1);
  for (int ch = 0; ch < 256; ++ch) {
    if (!seen[ch]) continue;
    index_[ch] = static_cast<int32_t>(vocabulary_.size());
    vocabulary_ += static_cast<char>(ch);
  }
  auto n = static_cast<int64_t>(text.size());
  auto split = static_cast<int64_t>(static_cast<double>(n) * (1 - validation_fraction));
  int64_t window = context + 1;
  if (split < window || n - split < window) {
    int64_t need = static_cast<int64_t>(static_cast<double>(window) / std::min(validation_fraction, 1 - validation_fraction)) + 1;
    fail(what_, ": ", n, " characters are too few for a context of ", context, ": each split needs a window of ", window,
         " characters (about ", need, " in all); use a longer text or a smaller context");
  }
  std::vector<int32_t> all = encode(text);
  train_.assign(all.begin(), all.begin() + split);
  validation_.assign(all.begin() + split, all.end());
}

TextDataset TextDataset::from_file(const std::string& path, int64_t context, double validation_fraction) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read '", path, "'");
  std::stringstream s;
  s << in.rdbuf();
  if (in.bad()) fail("reading '", path, "' failed");
  return TextDataset(s.str(), context, path, validation_fraction);
}

std::vector<int32_t> TextDataset::encode(const std::string& text) const {
  std::vector<int32_t> out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    int32_t id = index_[static_cast<unsigned char>(text[i])];
    if (id < 0) {
      fail(what_, ": character ", static_cast<int>(static_cast<unsigned char>(text[i])), " at offset ", i,
           " is not in the vocabulary of ", vocabulary_.size(), " characters");
    }
    out.push_back(id);
  }
  return out;
}

std::string TextDataset::decode(const std::vector<int32_t>& tokens) const {
  std::string out;
  for (int32_t t : tokens) {
    if (t < 0 || t >= vocab_size()) fail(what_, ": token ", t, " is outside the vocabulary of ", vocab_size());
    out += vocabulary_[static_cast<size_t>(t)];
  }
  return out;
}

std::pair<Array, Array> TextDataset::batch(Split split, int64_t batch, std::mt19937_64& rng) const {
  if (batch < 1) fail("TextDataset: the batch must be positive, got ", batch);
  const std::vector<int32_t>& data = split == Split::Train ? train_ : validation_;
  std::uniform_int_distribution<int64_t> start(0, static_cast<int64_t>(data.size()) - context_ - 1);
  Array tokens(DType::I32, {batch, context_}), targets(DType::I32, {batch, context_});
  for (int64_t b = 0; b < batch; ++b) {
    int64_t at = start(rng);
    for (int64_t t = 0; t < context_; ++t) {
      tokens.set(b * context_ + t, data[static_cast<size_t>(at + t)]);
      targets.set(b * context_ + t, data[static_cast<size_t>(at + t + 1)]);
    }
  }
  return {tokens, targets};
}

}  // namespace lumen::train
