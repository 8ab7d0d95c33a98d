// BERT-style encoders (BERT, MiniLM, sentence-transformers models): token,
// position and segment embeddings, post-norm blocks (attention, GELU MLP),
// and pooling (mean, CLS, max or last token, as sentence-transformers). Parameter names are those of Hugging Face `BertModel`
// ("encoder.layer.0.attention.self.query.weight").
#pragma once

#include <string>
#include <vector>

#include "lumen/nn/layers.h"

namespace lumen::models {

// sentence-transformers' pooling modes lumen computes.
enum class Pooling { Mean, Cls, Max, LastToken };
const char* pooling_name(Pooling p);  // "mean", "cls", "max", "lasttoken"

struct BertConfig {
  int64_t vocab = 0, dim = 0, layers = 0, heads = 0, hidden = 0, max_position = 512, type_vocab = 2;
  double norm_eps = 1e-12;
  std::string activation = "gelu";
  std::string origin = "bert config";  // for messages

  static BertConfig from_json(const std::string& text, const std::string& origin = "config.json");
  static BertConfig from_file(const std::string& path);
  void validate() const;
  std::string summary() const;
};

class Bert : public nn::Module {
 public:
  Bert(Graph& g, const BertConfig& config);

  // ids [batch, seq] (i32), mask [batch, seq] (f32: 1 for tokens, 0 for
  // padding) -> hidden states [batch, seq, dim]. Segment 0 throughout.
  Tensor operator()(const Tensor& ids, const Tensor& mask) const;

  // The mean of the hidden states over unmasked tokens [batch, dim],
  // L2-normalised when `normalize` (sentence-transformers' Normalize).
  static Tensor mean_pool(const Tensor& hidden, const Tensor& mask, bool normalize);
  // One vector per sequence [batch, dim] by `mode` (padding on the right):
  // the mean or the element-wise max over unmasked tokens, the first (CLS)
  // token, or the last unmasked token; L2-normalised when `normalize`.
  static Tensor pool(const Tensor& hidden, const Tensor& mask, Pooling mode, bool normalize);

  struct Layer {
    nn::Linear query, key, value, attn_out;
    nn::LayerNorm attn_norm;
    nn::Linear up, down;
    nn::LayerNorm out_norm;
  };

  BertConfig config;
  nn::Embedding word, position, token_type;
  nn::LayerNorm embed_norm;
  std::vector<Layer> layers;
};

}  // namespace lumen::models
