#include "lumen/models/llama_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "lumen/core/error.h"
#include "lumen/io/text_file.h"
#include "lumen/models/config_json.h"

namespace lumen::models {

namespace {

using Json = nlohmann::json;

// A number of the rope object (rope_parameters or rope_scaling), `fallback` when absent.
double rope_number(const ConfigJson& j, const Json& rope, const char* object, const char* key, double fallback) {
  if (!rope.contains(key) || rope[key].is_null()) return fallback;
  if (!rope[key].is_number()) fail(j.what(), ": '", object, ".", key, "' must be a number, got ", rope[key].dump());
  return rope[key].get<double>();
}

// YaRN's parameters (transformers' defaults: beta_fast 32, beta_slow 1,
// original_max_position_embeddings the model's, truncate true).
void read_yarn(const ConfigJson& j, const Json& rope, const char* object, LlamaConfig& c) {
  RopeScaling& s = c.rope_scaling;
  double original = rope_number(j, rope, object, "original_max_position_embeddings", static_cast<double>(c.max_position));
  if (original < 1 || original != std::floor(original)) {
    fail(j.what(), ": '", object, ".original_max_position_embeddings' is ", original, "; it must be an integer >= 1");
  }
  s.original_max_position = static_cast<int64_t>(original);
  s.beta_fast = rope_number(j, rope, object, "beta_fast", 32);
  s.beta_slow = rope_number(j, rope, object, "beta_slow", 1);
  if (s.beta_fast == 0) s.beta_fast = 32;  // transformers: `or 32`, `or 1`
  if (s.beta_slow == 0) s.beta_slow = 1;
  s.attention_factor = rope_number(j, rope, object, "attention_factor", 0);
  s.mscale = rope_number(j, rope, object, "mscale", 0);
  s.mscale_all_dim = rope_number(j, rope, object, "mscale_all_dim", 0);
  if (rope.contains("truncate") && rope["truncate"].is_boolean()) s.truncate = rope["truncate"].get<bool>();
  if (!(s.beta_fast > 0 && s.beta_slow > 0) || s.attention_factor < 0 || s.mscale < 0 || s.mscale_all_dim < 0) {
    fail(j.what(), ": yarn rope scaling needs beta_fast, beta_slow > 0 and attention_factor, mscale, mscale_all_dim >= 0; got ",
         s.beta_fast, ", ", s.beta_slow, ", ", s.attention_factor, ", ", s.mscale, ", ", s.mscale_all_dim);
  }
}

// rope: transformers 5 nests it in rope_parameters (theta, type and scaling
// together); older configs use rope_theta and a rope_scaling object.
void read_rope(const ConfigJson& j, LlamaConfig& c) {
  const Json& json = j.json();
  const char* object = "rope_parameters";
  Json rope = json.contains(object) && json[object].is_object() ? json[object] : Json::object();
  c.rope_theta = rope_number(j, rope, object, "rope_theta", j.number("rope_theta", 10000.0));
  double partial = rope_number(j, rope, object, "partial_rotary_factor", j.number("partial_rotary_factor", 1.0));
  if (partial != 1.0) fail(j.what(), ": partial_rotary_factor is ", partial, "; lumen rotates whole heads only (1.0)");
  if (json.contains("rope_scaling") && json["rope_scaling"].is_object()) {
    object = "rope_scaling";
    rope = json[object];
  }
  RopeScaling& s = c.rope_scaling;
  s.type = rope.value("rope_type", rope.value("type", std::string("default")));
  if (s.type == "default") return;
  if (s.type != "linear" && s.type != "llama3" && s.type != "dynamic" && s.type != "yarn") {
    fail(j.what(), ": rope type '", s.type, "' is not supported (default, linear, llama3, dynamic, yarn)");
  }
  s.factor = rope_number(j, rope, object, "factor", 0);
  if (!(s.factor >= 1 && s.factor < 1e6)) {
    fail(j.what(), ": '", object, ".factor' is ", s.factor, "; rope type '", s.type, "' needs a factor >= 1");
  }
  if (s.type == "yarn") read_yarn(j, rope, object, c);
  if (s.type != "llama3") return;
  s.low_freq_factor = rope_number(j, rope, object, "low_freq_factor", 1.0);
  s.high_freq_factor = rope_number(j, rope, object, "high_freq_factor", 4.0);
  double original = rope_number(j, rope, object, "original_max_position_embeddings", static_cast<double>(c.max_position));
  s.original_max_position = static_cast<int64_t>(original);
  if (!(s.low_freq_factor > 0 && s.high_freq_factor > s.low_freq_factor) || original < 1 || original != std::floor(original)) {
    fail(j.what(), ": llama3 rope scaling needs 0 < low_freq_factor < high_freq_factor and an integer "
         "original_max_position_embeddings >= 1; got ", s.low_freq_factor, ", ", s.high_freq_factor, ", ", original);
  }
}

// layer_types (transformers 5 writes it) into c.window_layers; false when absent.
bool read_layer_types(const ConfigJson& j, LlamaConfig& c) {
  const Json& types = j.json().contains("layer_types") ? j.json()["layer_types"] : Json();
  if (!types.is_array()) return false;
  for (const Json& t : types) {
    std::string name = t.is_string() ? t.get<std::string>() : t.dump();
    if (name != "sliding_attention" && name != "full_attention") {
      fail(j.what(), ": layer_types holds '", name, "'; lumen knows sliding_attention and full_attention");
    }
    c.window_layers.push_back(name == "sliding_attention");
  }
  return true;
}

// Mistral and Phi-3: sliding_window applies to every layer. Qwen2 and Qwen3: only with
// use_sliding_window, to layers from max_window_layers on, or as layer_types
// says (transformers 5 writes the list). Gemma-2: layer_types, or every
// other layer from the first.
void read_sliding_window(const ConfigJson& j, LlamaConfig& c) {
  if (c.model_type == "gemma2") {
    c.sliding_window = j.integer("sliding_window", 4096);
    if (c.sliding_window <= 0) fail(j.what(), ": sliding_window is ", c.sliding_window, "; it must be positive");
    if (read_layer_types(j, c)) return;
    for (int64_t i = 0; i < c.layers; ++i) c.window_layers.push_back(i % 2 == 0);
    return;
  }
  if (c.model_type == "mistral" || c.model_type == "phi3") {
    c.sliding_window = j.integer("sliding_window", 0);
    if (j.has("sliding_window") && c.sliding_window <= 0) fail(j.what(), ": sliding_window is ", c.sliding_window, "; it must be positive or null");
    return;
  }
  if ((c.model_type != "qwen2" && c.model_type != "qwen3") || !j.flag("use_sliding_window", false) || !j.has("sliding_window")) return;
  c.sliding_window = j.integer("sliding_window");
  if (c.sliding_window <= 0) fail(j.what(), ": sliding_window is ", c.sliding_window, "; it must be positive or null");
  if (read_layer_types(j, c)) return;
  int64_t first = j.integer("max_window_layers", 28);
  for (int64_t i = 0; i < c.layers; ++i) c.window_layers.push_back(i >= first);
}

// Gemma-2's sandwich norms, attention scale and soft-capping (null caps: none).
void read_gemma2(const ConfigJson& j, LlamaConfig& c) {
  c.sandwich_norms = true;
  double scalar = j.number("query_pre_attn_scalar", 256);
  if (!(scalar > 0 && std::isfinite(scalar))) fail(j.what(), ": query_pre_attn_scalar is ", scalar, "; it must be > 0");
  c.attention_scale = 1.0 / std::sqrt(scalar);
  c.attn_softcap = j.number("attn_logit_softcapping", 0);
  c.final_softcap = j.number("final_logit_softcapping", 0);
  if (j.flag("use_bidirectional_attention", false)) {
    fail(j.what(), ": use_bidirectional_attention is set; lumen computes causal decoders only");
  }
}

}  // namespace

std::string gated_activation(const std::string& hf_name, const std::string& origin) {
  if (hf_name == "silu" || hf_name == "swish") return "silu";
  if (hf_name == "gelu_pytorch_tanh" || hf_name == "gelu_new") return "gelu_tanh";
  if (hf_name == "gelu" || hf_name == "relu") return hf_name;
  fail(origin, ": the activation '", hf_name, "' is not supported (silu, gelu, gelu_pytorch_tanh, gelu_new, relu)");
}

LlamaConfig LlamaConfig::from_json(const std::string& text, const std::string& origin) {
  ConfigJson j(text, "llama config '" + origin + "'");
  LlamaConfig c;
  c.origin = j.what();
  c.model_type = j.text("model_type", "llama");
  bool gemma2 = c.model_type == "gemma2", gemma = c.model_type == "gemma" || gemma2, qwen3 = c.model_type == "qwen3";
  if (c.model_type != "llama" && c.model_type != "mistral" && c.model_type != "qwen2" && !qwen3 && c.model_type != "phi3" && !gemma) {
    fail(j.what(), ": model_type '", c.model_type,
         "' is not a Llama-family decoder lumen computes (llama, mistral, qwen2, qwen3, phi3, gemma, gemma2)");
  }
  c.vocab = j.integer("vocab_size");
  c.dim = j.integer("hidden_size");
  c.layers = j.integer("num_hidden_layers");
  c.heads = j.integer("num_attention_heads");
  c.kv_heads = j.integer("num_key_value_heads", c.heads);
  c.hidden = j.integer("intermediate_size");
  c.head_dim = j.integer("head_dim", 0);
  if (c.head_dim == 0 && c.heads > 0) c.head_dim = gemma ? 256 : qwen3 ? 128 : c.dim / c.heads;  // transformers' defaults
  c.norm_eps = j.number("rms_norm_eps", 1e-6);
  c.tie_embeddings = j.flag("tie_word_embeddings", gemma);
  // Hugging Face: Qwen2 has q/k/v biases; Llama's, Qwen3's and Gemma's attention_bias adds them and o_proj's; Mistral has none.
  bool attention_bias = (c.model_type == "llama" || qwen3 || gemma) && j.flag("attention_bias", false);
  c.qkv_bias = c.model_type == "qwen2" || attention_bias;
  c.out_bias = attention_bias;
  c.mlp_bias = c.model_type == "llama" && j.flag("mlp_bias", false);
  // Gemma checkpoints may name the MLP's activation hidden_activation (it wins over hidden_act).
  std::string act = j.has("hidden_activation") ? j.text("hidden_activation", "") : j.text("hidden_act", gemma ? "gelu_pytorch_tanh" : "silu");
  c.activation = gated_activation(act, j.what());
  c.norm_plus_one = gemma;
  c.qk_norm = qwen3;
  if (gemma2) read_gemma2(j, c);
  c.scale_embeddings = gemma;
  c.max_position = j.integer("max_position_embeddings", 2048);
  read_rope(j, c);
  read_sliding_window(j, c);
  c.bos_token = j.integer("bos_token_id", -1);
  c.eos_tokens = j.integers("eos_token_id");
  c.validate();
  return c;
}

LlamaConfig LlamaConfig::from_file(const std::string& path) {
  return from_json(io::read_text_file(path, "llama config"), path);
}

LlamaConfig LlamaConfig::from_directory(const std::string& dir) {
  namespace fs = std::filesystem;
  LlamaConfig c = from_file((fs::path(dir) / "config.json").string());
  fs::path generation = fs::path(dir) / "generation_config.json";
  if (fs::exists(generation)) {  // Hugging Face's generate() takes its eos_token_id from here
    ConfigJson g(io::read_text_file(generation.string(), "generation config"), "generation config '" + generation.string() + "'");
    if (g.has("eos_token_id")) c.eos_tokens = g.integers("eos_token_id");
    c.validate();
  }
  return c;
}

void LlamaConfig::validate() const {
  auto key = [&](const char* hf, const char* gguf) { return gguf_keys ? model_type + "." + gguf : std::string(hf); };
  require_size(origin, key("vocab_size", "vocab (token_embd rows)"), vocab);
  require_size(origin, key("hidden_size", "embedding_length"), dim);
  require_size(origin, key("num_hidden_layers", "block_count"), layers);
  require_size(origin, key("num_attention_heads", "attention.head_count"), heads);
  require_size(origin, key("num_key_value_heads", "attention.head_count_kv"), kv_heads);
  require_size(origin, key("intermediate_size", "feed_forward_length"), hidden);
  require_size(origin, key("head_dim", "attention.key_length"), head_dim);
  require_size(origin, key("max_position_embeddings", "context_length"), max_position);
  require_divides(origin, key("num_key_value_heads", "attention.head_count_kv"), kv_heads,
                  key("num_attention_heads", "attention.head_count"), heads);
  if (head_dim % 2 != 0) fail(origin, ": head_dim ", head_dim, " must be even for rotary embeddings");
  require_epsilon(origin, key("rms_norm_eps", "attention.layer_norm_rms_epsilon"), norm_eps);
  require_rope_base(origin, key("rope_theta", "rope.freq_base"), rope_theta);
  if (!(attn_softcap >= 0 && std::isfinite(attn_softcap))) fail(origin, ": attn_logit_softcapping is ", attn_softcap, "; it must be > 0 (or null)");
  if (!(final_softcap >= 0 && std::isfinite(final_softcap))) fail(origin, ": final_logit_softcapping is ", final_softcap, "; it must be > 0 (or null)");
  if (!(attention_scale >= 0 && std::isfinite(attention_scale))) fail(origin, ": the attention scale is ", attention_scale, "; it must be > 0");
  if (sliding_window < 0) fail(origin, ": sliding_window is ", sliding_window, "; it must be positive (or absent)");
  const RopeScaling& r = rope_scaling;
  if (r.type != "default" && r.type != "linear" && r.type != "llama3" && r.type != "dynamic" && r.type != "yarn") {
    fail(origin, ": rope type '", r.type, "' is not supported (default, linear, llama3, dynamic, yarn)");
  }
  if (r.type == "dynamic" && head_dim <= 2) fail(origin, ": dynamic rope scaling needs head_dim > 2, got ", head_dim);
  if (r.type != "default" && !(std::isfinite(r.factor) && r.factor >= 1)) fail(origin, ": the rope scaling factor is ", r.factor, "; it must be >= 1");
  if (activation != "silu" && activation != "gelu_tanh" && activation != "gelu" && activation != "relu") {
    fail(origin, ": the MLP activation '", activation, "' is not one lumen computes (silu, gelu_tanh, gelu, relu)");
  }
  if (!window_layers.empty() && static_cast<int64_t>(window_layers.size()) != layers) {
    fail(origin, ": layer_types lists ", window_layers.size(), " layers but num_hidden_layers is ", layers);
  }
  if (bos_token < -1) fail(origin, ": bos_token_id is ", bos_token, "; it must be a token id (>= 0)");
  for (int64_t t : eos_tokens) {
    if (t < 0) fail(origin, ": eos_token_id holds ", t, "; token ids are >= 0");
  }
}

bool LlamaConfig::windowed(int64_t layer) const {
  if (sliding_window <= 0) return false;
  return window_layers.empty() || (layer >= 0 && layer < static_cast<int64_t>(window_layers.size()) && window_layers[layer]);
}

bool LlamaConfig::is_eos(int64_t token) const {
  return std::find(eos_tokens.begin(), eos_tokens.end(), token) != eos_tokens.end();
}

int64_t LlamaConfig::parameter_count() const {
  int64_t attn = dim * heads * head_dim * 2 + dim * kv_heads * head_dim * 2;
  int64_t mlp = 3 * dim * hidden;
  int64_t per_layer = attn + mlp + (sandwich_norms ? 4 : 2) * dim + (qk_norm ? 2 * head_dim : 0) + (qkv_bias ? (heads + 2 * kv_heads) * head_dim : 0) + (out_bias ? dim : 0) +
                      (mlp_bias ? 2 * hidden + dim : 0);
  return vocab * dim * (tie_embeddings ? 1 : 2) + layers * per_layer + dim;
}

std::string LlamaConfig::summary() const {
  std::ostringstream s;
  s << model_type << ": " << layers << " layers, dim " << dim << ", " << heads << " heads (" << kv_heads << " kv, head_dim "
    << head_dim << "), mlp " << hidden << ", vocab " << vocab;
  int64_t windowed_layers = 0;
  for (int64_t l = 0; l < layers; ++l) windowed_layers += windowed(l) ? 1 : 0;
  if (windowed_layers > 0) s << ", sliding window " << sliding_window << " in " << windowed_layers << " of " << layers << " layers";
  if (rope_scaling.type != "default") s << ", rope " << rope_scaling.type << " x" << rope_scaling.factor;
  if (rope_freq_factors) s << ", rope frequency factors";
  if (activation != "silu") s << ", " << activation << " MLP";
  if (qk_norm) s << ", q/k norms";
  if (attn_softcap > 0 || final_softcap > 0) s << ", soft-capping " << attn_softcap << " / " << final_softcap;
  return s.str();
}

}  // namespace lumen::models
