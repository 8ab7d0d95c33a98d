// SentenceEncoder — a BERT-style sentence-transformers model, compiled and
// ready to embed text: tokenize, pad a batch, run, pool as the model's
// 1_Pooling/config.json says (mean, cls, max, lasttoken; both its old boolean
// form and the new "pooling_mode" one), and normalize when modules.json says so. Batch size and sequence length are
// dynamic dims: one compiled program serves every batch.
//
// Like LlamaRunner, this is an application of compile(), not part of it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lumen/compile.h"
#include "lumen/io/tokenizer/tokenizer.h"
#include "lumen/io/weight_store.h"
#include "lumen/models/bert.h"

namespace lumen::models {

struct SentenceEncoderOptions {
  CompileOptions compile;
  int64_t max_length = 0;  // tokens per text; 0: sentence_bert_config.json, else the tokenizer's, else 512
};

class SentenceEncoder {
 public:
  // A model directory: config.json, model.safetensors, tokenizer.json, and
  // optionally modules.json, 1_Pooling/config.json, sentence_bert_config.json.
  explicit SentenceEncoder(const std::string& dir, const SentenceEncoderOptions& options = {});

  // Embeddings [texts, dim] (f32), `batch_size` texts per run.
  Array embed(const std::vector<std::string>& texts, int64_t batch_size = 32);
  // One padded batch: ids [batch, seq] (i32) and mask [batch, seq] (f32) -> pooled [batch, dim].
  Array pooled(const Array& ids, const Array& mask);
  // Hidden states [batch, seq, dim] of the last layer (compiles a second program on first use).
  Array hidden(const Array& ids, const Array& mask);
  // Token ids of one text, truncated to max_length (special tokens included).
  std::vector<int32_t> tokenize(const std::string& text) const;

  const BertConfig& config() const { return config_; }
  bool normalizes() const { return normalize_; }
  Pooling pooling() const { return pooling_; }
  // Checkpoint tensors the encoder does not read (only known-unneeded ones:
  // BERT's pooler, the position_ids buffer); construction refuses any other.
  const std::vector<std::string>& unused_weights() const { return unused_weights_; }
  int64_t max_length() const { return max_length_; }
  double compile_seconds() const { return compile_seconds_; }
  Program& program() { return *pooled_; }

 private:
  std::unique_ptr<Program> build(bool pooled, double budget_s);
  Array run(Program& p, const Array& ids, const Array& mask);

  static constexpr int64_t kSeqBlock = 16;

  BertConfig config_;
  std::shared_ptr<io::WeightStore> weights_;
  std::unique_ptr<io::Tokenizer> tokenizer_;
  SentenceEncoderOptions options_;
  bool normalize_ = false;
  Pooling pooling_ = Pooling::Mean;
  std::vector<std::string> unused_weights_;
  int64_t max_length_ = 512;
  int32_t pad_id_ = 0;
  double compile_seconds_ = 0;
  std::unique_ptr<Program> pooled_, hidden_;
};

}  // namespace lumen::models
