// Llama-family decoders (Llama 2/3, Mistral, Qwen2, Qwen3, Phi-3, Gemma,
// Gemma-2): token embedding (Gemma: scaled by sqrt(dim)), pre-norm blocks
// with RMSNorm (Gemma: by 1 + weight; Gemma-2 also around the attention's
// output and the MLP, with soft-capped attention scores and logits), rotary
// embeddings (with Llama 3, linear, dynamic NTK or YaRN frequency scaling,
// rope_scaling.h), grouped-query attention (Qwen3: q and k normalised per
// head) and a gated MLP (SwiGLU, Gemma's GeGLU), a final norm and the LM
// head. Parameter names are those of Hugging Face
// `LlamaForCausalLM` ("model.layers.0.self_attn.q_proj.weight").
//
// `forward` records one pass over new tokens and leaves attention over the
// cache to a callback, so different caches share the model: `step` keeps
// keys and values in persistent state (one contiguous cache per layer,
// [batch, kv_heads, capacity, head_dim]) and reads the first `past` rows;
// lumen/serve reads a paged cache through block tables.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lumen/models/llama_config.h"
#include "lumen/nn/layers.h"
#include "lumen/nn/rotary.h"
#include "lumen/nn/transformer.h"

namespace lumen::models {

class Llama : public nn::Module {
 public:
  Llama(Graph& g, const LlamaConfig& config);

  // One layer's attention over the step's rotated queries q [batch, heads,
  // seq, head_dim] and keys / values k, v [batch, kv_heads, seq, head_dim]
  // together with whatever the caller caches; returns [batch, heads, seq, head_dim].
  using Attend = std::function<Tensor(int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v)>;
  // tokens [batch, seq] (i32) with rotary tables from rope(). Returns logits
  // [batch, seq, vocab], or [batch, 1, vocab] for position `logits_at` only.
  Tensor forward(const Tensor& tokens, const nn::RotaryTables& rope, const Attend& attend,
                 std::optional<Expr> logits_at = std::nullopt);

  // Rotary tables for positions offset .. offset+seq-1, the same in every row:
  // [seq, head_dim]. `length`: positions the sequence holds with these
  // (dynamic rope scaling reads it; default offset + seq).
  nn::RotaryTables rope(const Expr& seq, const Expr& offset, std::optional<Expr> length = std::nullopt) const;
  // For positions given per row, [batch, seq] (i32): [batch, 1, seq, head_dim].
  nn::RotaryTables rope(const Tensor& positions) const;

  // tokens [batch, seq] at positions past .. past+seq-1 through the
  // contiguous cache (declares the cache states of `capacity` rows and their
  // updates). `past` and `seq` may be dynamic dims; the batch is static.
  // `real`: how many of the tokens are real, the rest padding (default:
  // logits_at + 1 when given, else seq).
  Tensor step(const Tensor& tokens, const Expr& past, int64_t capacity, std::optional<Expr> logits_at = std::nullopt,
              std::optional<Expr> real = std::nullopt);

  // The name of layer i's key or value cache state.
  static std::string cache_name(int64_t layer, bool keys);

  LlamaConfig config;
  // The KV cache's storage dtype in step(): f32, or f16 / bf16 (halves the
  // bytes attention reads per token; llama.cpp's default is f16).
  DType cache_dtype = DType::F32;
  nn::Embedding embed_tokens;
  std::vector<nn::TransformerBlock> layers;
  nn::RMSNorm norm;
  std::optional<nn::Linear> lm_head;  // absent when tied to the embedding
  std::optional<Tensor> rope_freqs;   // [head_dim / 2] divisors (config.rope_freq_factors)
  // Qwen3 (config.qk_norm): one RMSNorm over head_dim for q and one for k per layer.
  std::vector<nn::RMSNorm> q_norms, k_norms;
  // Gemma-2 (config.sandwich_norms): the MLP's input and output norms per layer.
  std::vector<nn::RMSNorm> pre_feedforward_norms, post_feedforward_norms;

  // Attention of q over keys / values where `mask` (bool, [seq, keys]) holds,
  // with the config's scale and score soft-capping.
  Tensor attention(const Tensor& q, const Tensor& keys, const Tensor& values, const Tensor& mask) const;

 private:
  // Per layer, two RMSNorms named model.layers.<i>.<first> and .<second>.
  void add_norm_pairs(Graph& g, const std::string& first, const std::string& second, int64_t dim,
                      std::vector<nn::RMSNorm>& firsts, std::vector<nn::RMSNorm>& seconds);
  Tensor inverse_frequencies(const Expr& length) const;  // [1, head_dim / 2]
  Tensor rms(const nn::RMSNorm& n, const Tensor& x) const;
  Tensor block(int64_t layer, const Tensor& x, const nn::RotaryTables& rope, const Attend& attend) const;
};

}  // namespace lumen::models
