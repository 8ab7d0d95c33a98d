// A character-level GPT: learned token and position embeddings, pre-norm
// GPT-2 blocks (LayerNorm, causal multi-head attention with biases, a GELU
// MLP four times as wide), a final LayerNorm and an untied head. The model
// `lumen train` trains on a text file; its parameters are declared through
// the installed nn::ParameterSource (train::StateParameters makes them
// trainable state).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lumen/core/array.h"
#include "lumen/nn/transformer.h"

namespace lumen::models {

struct CharGptConfig {
  int64_t vocab = 0;
  int64_t context = 64;  // the longest sequence (position embeddings)
  int64_t dim = 128;
  int64_t heads = 4;
  int64_t layers = 2;
};

class CharGpt {
 public:
  CharGpt(Graph& g, const CharGptConfig& config);

  // tokens [batch, seq] i32 (seq <= context) -> logits [batch, seq, vocab].
  Tensor logits(const Tensor& tokens) const;
  // Mean cross-entropy of predicting `targets` [batch, seq] from `tokens`.
  Tensor loss(const Tensor& tokens, const Tensor& targets) const;

  // Every parameter, by name, in declaration order.
  std::vector<std::pair<std::string, Tensor>> parameters() const;
  // GPT-2's initialisation, seeded: N(0, 0.02) matrices and embeddings, zero
  // biases, unit LayerNorm gains.
  std::map<std::string, Array> initial_values(uint64_t seed) const;
  int64_t parameter_count() const;

  CharGptConfig config;

 private:
  nn::Embedding tokens_, positions_;
  std::vector<nn::TransformerBlock> blocks_;
  nn::LayerNorm norm_;
  nn::Linear head_;
};

}  // namespace lumen::models
