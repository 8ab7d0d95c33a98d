// LlamaConfig — the hyper-parameters of a Llama-family decoder (Llama 2/3,
// Mistral, Qwen2, Qwen3, Phi-3, Gemma, Gemma-2), read from a Hugging Face config.json (or GGUF
// metadata, llama_gguf.h) and checked: a key of the wrong type, a value out
// of range or a feature lumen does not compute is an error naming it, never
// silent drift.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lumen::models {

// Rotary frequency scaling (Hugging Face rope_scaling / rope_parameters).
struct RopeScaling {
  // "default"; "linear": every frequency divided by `factor`; "llama3": Llama
  // 3.1's blend (low frequencies divided by `factor`, high ones kept, a
  // smooth mix between, by wavelength against original_max_position).
  // "dynamic": NTK-aware, the base raised as the sequence outgrows
  // max_position_embeddings; "yarn": see rope_scaling.h.
  std::string type = "default";
  double factor = 1.0;
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  int64_t original_max_position = 8192;                   // llama3, yarn
  // yarn: the ramp's rotation counts, whether its ends are rounded outwards,
  // and the attention factor (0: from factor, or from mscale / mscale_all_dim).
  double beta_fast = 32, beta_slow = 1;
  bool truncate = true;
  double attention_factor = 0, mscale = 0, mscale_all_dim = 0;
};

struct LlamaConfig {
  std::string model_type = "llama";
  int64_t vocab = 0, dim = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, hidden = 0;
  double norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  // GGUF: llama.cpp stores Llama 3's scaling as a table of per-frequency
  // divisors (tensor rope_freqs.weight, [head_dim / 2]); the model reads it.
  bool rope_freq_factors = false;
  int64_t max_position = 2048;
  bool tie_embeddings = false;
  bool qkv_bias = false;  // Qwen2; Llama and Gemma with attention_bias
  bool out_bias = false;  // Llama and Gemma with attention_bias (o_proj.bias)
  bool mlp_bias = false;  // Llama with mlp_bias
  // The gated MLP: down(act(gate(x)) * up(x)). "silu" (SwiGLU), "gelu_tanh"
  // (Gemma's GeGLU, gelu_pytorch_tanh), "gelu" (erf), "relu".
  std::string activation = "silu";
  bool norm_plus_one = false;     // Gemma (Hugging Face): RMSNorm scales by (1 + weight)
  bool scale_embeddings = false;  // Gemma: embeddings times sqrt(hidden_size)
  bool qk_norm = false;           // Qwen3: RMSNorm over each head of q and k (q_norm, k_norm) before rotary
  // Gemma-2: RMSNorm on the attention's output (post_attention_layernorm) and
  // on the MLP's input and output (pre_ / post_feedforward_layernorm).
  bool sandwich_norms = false;
  double attention_scale = 0;  // 0: head_dim^-0.5; Gemma-2: query_pre_attn_scalar^-0.5
  // Soft-capping (Gemma-2), 0 for none: x -> tanh(x / cap) · cap on the
  // attention scores (before the mask) and on the final logits.
  double attn_softcap = 0, final_softcap = 0;
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

  // From a Hugging Face config.json (llama, mistral, qwen2, qwen3, phi3, gemma, gemma2).
  // Phi-3's fused qkv_proj / gate_up_proj are split when loading (fused_weights.h).
  // Unsupported features (other rope scalings, activations) are errors.
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

// Hugging Face's activation name ("silu", "gelu_pytorch_tanh", ...) as a
// LlamaConfig::activation; an unknown one is an error naming `origin`.
std::string gated_activation(const std::string& hf_name, const std::string& origin);

}  // namespace lumen::models
