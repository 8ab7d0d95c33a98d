// TextDataset — a text file as character tokens for language-model training:
// the vocabulary is the file's distinct bytes (sorted), the first 90% of the
// text is the training split and the rest the validation split, and a batch
// is `batch` windows of context + 1 tokens taken at random offsets of one
// split (inputs, and the same windows shifted by one as targets).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "lumen/core/array.h"

namespace lumen::train {

enum class Split { Train, Validation };

class TextDataset {
 public:
  // `what` names the text in errors (a file's path). Needs a validation split
  // of at least one window: context + 2 characters.
  TextDataset(const std::string& text, int64_t context, std::string what, double validation_fraction = 0.1);
  static TextDataset from_file(const std::string& path, int64_t context, double validation_fraction = 0.1);

  const std::string& vocabulary() const { return vocabulary_; }
  int64_t vocab_size() const { return static_cast<int64_t>(vocabulary_.size()); }
  int64_t size(Split split) const { return static_cast<int64_t>(split == Split::Train ? train_.size() : validation_.size()); }

  // Characters outside the vocabulary are an error naming the first one.
  std::vector<int32_t> encode(const std::string& text) const;
  std::string decode(const std::vector<int32_t>& tokens) const;

  // {tokens, targets}, each [batch, context] i32.
  std::pair<Array, Array> batch(Split split, int64_t batch, std::mt19937_64& rng) const;

 private:
  std::string what_;
  int64_t context_;
  std::string vocabulary_;
  int32_t index_[256];
  std::vector<int32_t> train_, validation_;
};

}  // namespace lumen::train
