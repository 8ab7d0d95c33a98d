#include "lumen/models/llama.h"

#include <nlohmann/json.hpp>

#include <sstream>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/io/text_file.h"
#include "lumen/ops/linalg.h"

namespace lumen::models {

namespace {

using Json = nlohmann::json;

nn::TransformerConfig block_config(const LlamaConfig& c) {
  nn::TransformerConfig t;
  t.attention.dim = c.dim;
  t.attention.heads = c.heads;
  t.attention.kv_heads = c.kv_heads;
  t.attention.head_dim = c.head_dim;
  t.attention.causal = true;
  t.attention.rope_theta = c.rope_theta;
  t.attention.qkv_bias = c.qkv_bias;
  t.hidden = c.hidden;
  t.norm = "rms";
  t.norm_eps = c.norm_eps;
  t.mlp = "swiglu";
  return t;
}

std::vector<nn::TransformerBlock> make_layers(Graph& g, const LlamaConfig& c) {
  c.validate();
  std::vector<nn::TransformerBlock> out;
  for (int64_t i = 0; i < c.layers; ++i) out.emplace_back(g, "model.layers." + std::to_string(i), block_config(c));
  return out;
}

}  // namespace

LlamaConfig LlamaConfig::from_json(const std::string& text, const std::string& origin) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    fail("llama config '", origin, "': not valid JSON (", e.what(), ")");
  }
  if (!j.is_object()) fail("llama config '", origin, "': expected a JSON object");
  auto need = [&](const char* key) -> int64_t {
    if (!j.contains(key) || !j[key].is_number_integer()) fail("llama config '", origin, "': needs an integer '", key, "'");
    return j[key].get<int64_t>();
  };
  auto number = [&](const char* key, double fallback) {
    return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
  };
  LlamaConfig c;
  c.model_type = j.value("model_type", std::string("llama"));
  if (c.model_type != "llama" && c.model_type != "mistral" && c.model_type != "qwen2") {
    fail("llama config '", origin, "': model_type '", c.model_type, "' is not a Llama-family decoder (llama, mistral, qwen2)");
  }
  c.vocab = need("vocab_size");
  c.dim = need("hidden_size");
  c.layers = need("num_hidden_layers");
  c.heads = need("num_attention_heads");
  c.kv_heads = j.contains("num_key_value_heads") && j["num_key_value_heads"].is_number_integer() ? j["num_key_value_heads"].get<int64_t>() : c.heads;
  c.hidden = need("intermediate_size");
  c.head_dim = j.contains("head_dim") && j["head_dim"].is_number_integer() ? j["head_dim"].get<int64_t>() : 0;
  if (c.head_dim == 0 && c.heads > 0) c.head_dim = c.dim / c.heads;
  c.norm_eps = number("rms_norm_eps", 1e-6);
  c.max_position = j.contains("max_position_embeddings") && j["max_position_embeddings"].is_number_integer()
                       ? j["max_position_embeddings"].get<int64_t>()
                       : 2048;
  c.tie_embeddings = j.value("tie_word_embeddings", false);
  c.qkv_bias = c.model_type == "qwen2" || j.value("attention_bias", false);
  if (j.value("mlp_bias", false)) fail("llama config '", origin, "': mlp_bias is not supported");
  std::string act = j.value("hidden_act", std::string("silu"));
  if (act != "silu") fail("llama config '", origin, "': hidden_act '", act, "' is not supported (silu)");
  // rope: transformers 5 nests it in rope_parameters; older configs use rope_theta / rope_scaling.
  Json rope = j.contains("rope_parameters") && j["rope_parameters"].is_object() ? j["rope_parameters"] : Json::object();
  c.rope_theta = rope.contains("rope_theta") && rope["rope_theta"].is_number() ? rope["rope_theta"].get<double>() : number("rope_theta", 10000.0);
  std::string rope_type = rope.value("rope_type", std::string("default"));
  if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) {
    rope_type = j["rope_scaling"].value("rope_type", j["rope_scaling"].value("type", std::string("?")));
  }
  if (rope_type != "default") fail("llama config '", origin, "': rope type '", rope_type, "' is not supported (default rotary only)");
  if (j.contains("bos_token_id") && j["bos_token_id"].is_number_integer()) c.bos_token = j["bos_token_id"].get<int64_t>();
  if (j.contains("eos_token_id") && j["eos_token_id"].is_number_integer()) c.eos_token = j["eos_token_id"].get<int64_t>();
  c.validate();
  return c;
}

LlamaConfig LlamaConfig::from_file(const std::string& path) {
  return from_json(io::read_text_file(path, "llama config"), path);
}

void LlamaConfig::validate() const {
  if (vocab <= 0 || dim <= 0 || layers <= 0 || heads <= 0 || kv_heads <= 0 || hidden <= 0 || head_dim <= 0) {
    fail("llama config: sizes must be positive (", summary(), ")");
  }
  if (heads % kv_heads != 0) fail("llama config: ", heads, " heads cannot share ", kv_heads, " key/value heads");
  if (head_dim % 2 != 0) fail("llama config: head_dim ", head_dim, " must be even for rotary embeddings");
}

int64_t LlamaConfig::parameter_count() const {
  int64_t attn = dim * heads * head_dim * 2 + dim * kv_heads * head_dim * 2;
  int64_t mlp = 3 * dim * hidden;
  int64_t per_layer = attn + mlp + 2 * dim + (qkv_bias ? (heads + 2 * kv_heads) * head_dim : 0);
  return vocab * dim * (tie_embeddings ? 1 : 2) + layers * per_layer + dim;
}

std::string LlamaConfig::summary() const {
  std::ostringstream s;
  s << model_type << ": " << layers << " layers, dim " << dim << ", " << heads << " heads (" << kv_heads << " kv, head_dim "
    << head_dim << "), mlp " << hidden << ", vocab " << vocab;
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
