// Llama-family decoders (Llama, Mistral, Qwen2 shapes): token embedding,
// pre-norm blocks with RMSNorm, rotary embeddings, grouped-query attention
// and a SwiGLU MLP, a final norm and the LM head. Parameter names are those
// of Hugging Face `LlamaForCausalLM` ("model.layers.0.self_attn.q_proj.weight").
//
// `step` records one forward pass over `seq` new tokens at positions
// past .. past+seq-1. Keys and values live in persistent state (one cache
// per layer, [batch, kv_heads, capacity, head_dim]): the step reads the first
// `past` rows and appends its own. `past` and `seq` may be dynamic dims, so
// one compiled program serves every position.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lumen/nn/layers.h"
#include "lumen/nn/transformer.h"

namespace lumen::models {

struct LlamaConfig {
  std::string model_type = "llama";
  int64_t vocab = 0, dim = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, hidden = 0;
  double norm_eps = 1e-6;
  double rope_theta = 10000.0;
  int64_t max_position = 2048;
  bool tie_embeddings = false;
  bool qkv_bias = false;  // Qwen2; Llama with attention_bias
  bool out_bias = false;  // Llama with attention_bias (o_proj.bias)
  bool mlp_bias = false;  // Llama with mlp_bias
  // Sliding-window attention (Mistral sliding_window, Qwen2 use_sliding_window):
  // in a windowed layer the query at position i sees keys j with
  // i - sliding_window < j <= i. window_layers[l] says whether layer l is
  // windowed (Qwen2: layers from max_window_layers on); empty: every layer.
  int64_t sliding_window = 0;  // 0: full causal attention
  std::vector<bool> window_layers;
  int64_t bos_token = -1;
  std::vector<int64_t> eos_tokens;  // generation stops at any of them
  // Where the config came from and whether its keys are GGUF metadata keys (for messages).
  std::string origin = "llama config";
  bool gguf_keys = false;

  // From a Hugging Face config.json (llama, mistral, qwen2). Unsupported
  // features (rope scaling, other activations) are errors, not silent drift.
  static LlamaConfig from_json(const std::string& text, const std::string& origin = "config.json");
  static LlamaConfig from_file(const std::string& path);
  // A model directory: config.json, and generation_config.json's eos_token_id when present.
  static LlamaConfig from_directory(const std::string& dir);
  // Throws lumen::Error naming the key, its value and what is allowed.
  void validate() const;
  bool windowed(int64_t layer) const;
  bool is_eos(int64_t token) const;
  int64_t parameter_count() const;
  std::string summary() const;  // "llama: 2 layers, dim 64, 4 heads (2 kv), vocab 256"
};

class Llama : public nn::Module {
 public:
  Llama(Graph& g, const LlamaConfig& config);

  // tokens [batch, seq] (i32). Returns logits [batch, seq, vocab], or
  // [batch, 1, vocab] for position `logits_at` only (e.g. the last real
  // token when the step is padded). Declares the cache states (capacity
  // rows) and their updates.
  Tensor step(const Tensor& tokens, const Expr& past, int64_t capacity, std::optional<Expr> logits_at = std::nullopt);

  // The name of layer i's key or value cache state.
  static std::string cache_name(int64_t layer, bool keys);

  LlamaConfig config;
  nn::Embedding embed_tokens;
  std::vector<nn::TransformerBlock> layers;
  nn::RMSNorm norm;
  std::optional<nn::Linear> lm_head;  // absent when tied to the embedding
};

}  // namespace lumen::models
