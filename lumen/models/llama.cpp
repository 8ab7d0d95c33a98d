#include "lumen/models/llama.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/io/text_file.h"
#include "lumen/models/config_json.h"
#include "lumen/ops/linalg.h"

namespace lumen::models {

namespace {

using Json = nlohmann::json;

nn::TransformerConfig block_config(const LlamaConfig& c, int64_t layer) {
  nn::TransformerConfig t;
  t.attention.dim = c.dim;
  t.attention.heads = c.heads;
  t.attention.kv_heads = c.kv_heads;
  t.attention.head_dim = c.head_dim;
  t.attention.causal = true;
  t.attention.rope_theta = c.rope_theta;
  t.attention.qkv_bias = c.qkv_bias;
  t.attention.out_bias = c.out_bias;
  if (c.windowed(layer)) t.attention.sliding_window = c.sliding_window;
  t.hidden = c.hidden;
  t.norm = "rms";
  t.norm_eps = c.norm_eps;
  t.mlp = "swiglu";
  t.mlp_bias = c.mlp_bias;
  return t;
}

std::vector<nn::TransformerBlock> make_layers(Graph& g, const LlamaConfig& c) {
  c.validate();
  std::vector<nn::TransformerBlock> out;
  for (int64_t i = 0; i < c.layers; ++i) out.emplace_back(g, "model.layers." + std::to_string(i), block_config(c, i));
  return out;
}

// rope: transformers 5 nests it in rope_parameters; older configs use rope_theta / rope_scaling.
void read_rope(const ConfigJson& j, LlamaConfig& c) {
  const Json& json = j.json();
  Json rope = json.contains("rope_parameters") && json["rope_parameters"].is_object() ? json["rope_parameters"] : Json::object();
  c.rope_theta = j.number("rope_theta", 10000.0);
  if (rope.contains("rope_theta")) {
    if (!rope["rope_theta"].is_number()) fail(j.what(), ": 'rope_parameters.rope_theta' must be a number, got ", rope["rope_theta"].dump());
    c.rope_theta = rope["rope_theta"].get<double>();
  }
  std::string rope_type = rope.value("rope_type", std::string("default"));
  if (json.contains("rope_scaling") && json["rope_scaling"].is_object()) {
    rope_type = json["rope_scaling"].value("rope_type", json["rope_scaling"].value("type", std::string("?")));
  }
  if (rope_type != "default") fail(j.what(), ": rope type '", rope_type, "' is not supported (default rotary only)");
}

// Mistral: sliding_window applies to every layer. Qwen2: only with
// use_sliding_window, to layers from max_window_layers on, or as layer_types
// says (transformers 5 writes the list).
void read_sliding_window(const ConfigJson& j, LlamaConfig& c) {
  if (c.model_type == "mistral") {
    c.sliding_window = j.integer("sliding_window", 0);
    if (j.has("sliding_window") && c.sliding_window <= 0) fail(j.what(), ": sliding_window is ", c.sliding_window, "; it must be positive or null");
    return;
  }
  if (c.model_type != "qwen2" || !j.flag("use_sliding_window", false) || !j.has("sliding_window")) return;
  c.sliding_window = j.integer("sliding_window");
  if (c.sliding_window <= 0) fail(j.what(), ": sliding_window is ", c.sliding_window, "; it must be positive or null");
  const Json& types = j.json().contains("layer_types") ? j.json()["layer_types"] : Json();
  if (types.is_array()) {
    for (const Json& t : types) {
      std::string name = t.is_string() ? t.get<std::string>() : t.dump();
      if (name != "sliding_attention" && name != "full_attention") {
        fail(j.what(), ": layer_types holds '", name, "'; lumen knows sliding_attention and full_attention");
      }
      c.window_layers.push_back(name == "sliding_attention");
    }
    return;
  }
  int64_t first = j.integer("max_window_layers", 28);
  for (int64_t i = 0; i < c.layers; ++i) c.window_layers.push_back(i >= first);
}

}  // namespace

LlamaConfig LlamaConfig::from_json(const std::string& text, const std::string& origin) {
  ConfigJson j(text, "llama config '" + origin + "'");
  LlamaConfig c;
  c.origin = j.what();
  c.model_type = j.text("model_type", "llama");
  if (c.model_type != "llama" && c.model_type != "mistral" && c.model_type != "qwen2") {
    fail(j.what(), ": model_type '", c.model_type, "' is not a Llama-family decoder (llama, mistral, qwen2)");
  }
  c.vocab = j.integer("vocab_size");
  c.dim = j.integer("hidden_size");
  c.layers = j.integer("num_hidden_layers");
  c.heads = j.integer("num_attention_heads");
  c.kv_heads = j.integer("num_key_value_heads", c.heads);
  c.hidden = j.integer("intermediate_size");
  c.head_dim = j.integer("head_dim", 0);
  if (c.head_dim == 0 && c.heads > 0) c.head_dim = c.dim / c.heads;
  c.norm_eps = j.number("rms_norm_eps", 1e-6);
  c.max_position = j.integer("max_position_embeddings", 2048);
  c.tie_embeddings = j.flag("tie_word_embeddings", false);
  // Hugging Face: Qwen2 has q/k/v biases; Llama's attention_bias adds them and o_proj's; Mistral has none.
  bool attention_bias = c.model_type == "llama" && j.flag("attention_bias", false);
  c.qkv_bias = c.model_type == "qwen2" || attention_bias;
  c.out_bias = attention_bias;
  c.mlp_bias = c.model_type == "llama" && j.flag("mlp_bias", false);
  std::string act = j.text("hidden_act", "silu");
  if (act != "silu") fail(j.what(), ": hidden_act '", act, "' is not supported (silu)");
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
  if (sliding_window < 0) fail(origin, ": sliding_window is ", sliding_window, "; it must be positive (or absent)");
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
  int64_t per_layer = attn + mlp + 2 * dim + (qkv_bias ? (heads + 2 * kv_heads) * head_dim : 0) + (out_bias ? dim : 0) +
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
  return s.str();
}

Llama::Llama(Graph& g, const LlamaConfig& c)
    : Module(g, ""),
      config(c),
      embed_tokens(g, "model.embed_tokens", c.vocab, c.dim),
      layers(make_layers(g, c)),
      norm(g, "model.norm", c.dim, c.norm_eps) {
  adopt(embed_tokens);
  for (const nn::TransformerBlock& b : layers) adopt(b);
  adopt(norm);
  if (!c.tie_embeddings) {
    lm_head.emplace(g, "lm_head", c.dim, c.vocab, false);
    adopt(*lm_head);
  }
}

std::string Llama::cache_name(int64_t layer, bool keys) {
  return "model.layers." + std::to_string(layer) + (keys ? ".self_attn.k_cache" : ".self_attn.v_cache");
}

Tensor Llama::step(const Tensor& tokens, const Expr& past, int64_t capacity, std::optional<Expr> logits_at) {
  if (tokens.rank() != 2) fail("llama: tokens must be [batch, seq], got ", to_string(tokens.shape()));
  const Expr& batch = tokens.shape()[0];
  const Expr& seq = tokens.shape()[1];
  if (!batch.is_const()) fail("llama: the batch size must be static");
  Graph& g = graph();
  g.require(le(past + seq, Expr(capacity)),
            "llama: the KV cache holds " + std::to_string(capacity) + " positions; past + seq exceeds it (reset or raise the capacity)");
  Tensor x = embed_tokens(tokens);
  for (size_t i = 0; i < layers.size(); ++i) {
    Shape cache_shape{batch, Expr(config.kv_heads), Expr(capacity), Expr(config.head_dim)};
    Tensor k_cache = g.state(cache_name(static_cast<int64_t>(i), true), cache_shape);
    Tensor v_cache = g.state(cache_name(static_cast<int64_t>(i), false), cache_shape);
    nn::TransformerBlock::Output o =
        layers[i](x, k_cache.slice(2, Expr(0), past), v_cache.slice(2, Expr(0), past));
    g.assign(k_cache.slice(2, past, simplify(past + seq)), o.new_keys);
    g.assign(v_cache.slice(2, past, simplify(past + seq)), o.new_values);
    x = o.out;
  }
  if (logits_at) x = x.slice(1, *logits_at, simplify(*logits_at + 1));
  x = norm(x);
  return lm_head ? (*lm_head)(x) : ops::linear(x, embed_tokens.weight);
}

}  // namespace lumen::models
