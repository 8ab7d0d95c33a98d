#include "lumen/models/bert.h"

#include <nlohmann/json.hpp>

#include <cfloat>
#include <sstream>

#include "lumen/core/error.h"
#include "lumen/io/text_file.h"
#include "lumen/nn/mlp.h"
#include "lumen/ops/attention.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/reduce.h"

namespace lumen::models {

namespace {

std::vector<Bert::Layer> make_layers(Graph& g, const BertConfig& c) {
  c.validate();
  std::vector<Bert::Layer> out;
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string p = "encoder.layer." + std::to_string(i) + ".";
    out.push_back({nn::Linear(g, p + "attention.self.query", c.dim, c.dim), nn::Linear(g, p + "attention.self.key", c.dim, c.dim),
                   nn::Linear(g, p + "attention.self.value", c.dim, c.dim), nn::Linear(g, p + "attention.output.dense", c.dim, c.dim),
                   nn::LayerNorm(g, p + "attention.output.LayerNorm", c.dim, c.norm_eps),
                   nn::Linear(g, p + "intermediate.dense", c.dim, c.hidden), nn::Linear(g, p + "output.dense", c.hidden, c.dim),
                   nn::LayerNorm(g, p + "output.LayerNorm", c.dim, c.norm_eps)});
  }
  return out;
}

// [batch, seq, heads * head_dim] -> [batch, heads, seq, head_dim]
Tensor heads_first(const Tensor& x, int64_t heads) {
  int64_t head_dim = x.shape()[2].value() / heads;
  return x.reshape({x.shape()[0], x.shape()[1], Expr(heads), Expr(head_dim)}).permute({0, 2, 1, 3});
}

}  // namespace

BertConfig BertConfig::from_json(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail("bert config '", origin, "': not valid JSON (", e.what(), ")");
  }
  auto need = [&](const char* key) -> int64_t {
    if (!j.contains(key) || !j[key].is_number_integer()) fail("bert config '", origin, "': needs an integer '", key, "'");
    return j[key].get<int64_t>();
  };
  BertConfig c;
  std::string type = j.value("model_type", std::string("bert"));
  if (type != "bert") fail("bert config '", origin, "': model_type '", type, "' is not bert");
  c.vocab = need("vocab_size");
  c.dim = need("hidden_size");
  c.layers = need("num_hidden_layers");
  c.heads = need("num_attention_heads");
  c.hidden = need("intermediate_size");
  c.max_position = j.value("max_position_embeddings", int64_t{512});
  c.type_vocab = j.value("type_vocab_size", int64_t{2});
  c.norm_eps = j.value("layer_norm_eps", 1e-12);
  c.activation = j.value("hidden_act", std::string("gelu"));
  if (c.activation != "gelu" && c.activation != "relu" && c.activation != "gelu_new") {
    fail("bert config '", origin, "': hidden_act '", c.activation, "' is not supported (gelu, gelu_new, relu)");
  }
  if (j.value("position_embedding_type", std::string("absolute")) != "absolute") {
    fail("bert config '", origin, "': only absolute position embeddings are supported");
  }
  c.validate();
  return c;
}

BertConfig BertConfig::from_file(const std::string& path) {
  return from_json(io::read_text_file(path, "bert config"), path);
}

void BertConfig::validate() const {
  if (vocab <= 0 || dim <= 0 || layers <= 0 || heads <= 0 || hidden <= 0 || max_position <= 0 || type_vocab <= 0) {
    fail("bert config: sizes must be positive (", summary(), ")");
  }
  if (dim % heads != 0) fail("bert config: hidden size ", dim, " is not divisible by ", heads, " heads");
}

std::string BertConfig::summary() const {
  std::ostringstream s;
  s << "bert: " << layers << " layers, dim " << dim << ", " << heads << " heads, mlp " << hidden << ", vocab " << vocab;
  return s.str();
}

Bert::Bert(Graph& g, const BertConfig& c)
    : Module(g, ""),
      config(c),
      word(g, "embeddings.word_embeddings", c.vocab, c.dim),
      position(g, "embeddings.position_embeddings", c.max_position, c.dim),
      token_type(g, "embeddings.token_type_embeddings", c.type_vocab, c.dim),
      embed_norm(g, "embeddings.LayerNorm", c.dim, c.norm_eps),
      layers(make_layers(g, c)) {
  for (const Module* m : {static_cast<const Module*>(&word), static_cast<const Module*>(&position),
                          static_cast<const Module*>(&token_type), static_cast<const Module*>(&embed_norm)}) {
    adopt(*m);
  }
  for (const Layer& l : layers) {
    for (const Module* m : {static_cast<const Module*>(&l.query), static_cast<const Module*>(&l.key),
                            static_cast<const Module*>(&l.value), static_cast<const Module*>(&l.attn_out),
                            static_cast<const Module*>(&l.attn_norm), static_cast<const Module*>(&l.up),
                            static_cast<const Module*>(&l.down), static_cast<const Module*>(&l.out_norm)}) {
      adopt(*m);
    }
  }
}

Tensor Bert::operator()(const Tensor& ids, const Tensor& mask) const {
  if (ids.rank() != 2) fail("bert: ids must be [batch, seq], got ", to_string(ids.shape()));
  const Expr& batch = ids.shape()[0];
  const Expr& seq = ids.shape()[1];
  graph().require(le(seq, Expr(config.max_position)),
                  "bert: sequences are limited to " + std::to_string(config.max_position) + " positions");
  Shape hidden_shape{batch, seq, Expr(config.dim)};
  Tensor positions = position.weight.slice(0, Expr(0), seq).unsqueeze(0).expand(hidden_shape);
  Tensor segment = token_type.weight.slice(0, Expr(0), Expr(1)).unsqueeze(0).expand(hidden_shape);
  Tensor x = embed_norm(word(ids) + positions + segment);
  // Padding: -FLT_MAX added to scores of masked keys (as Hugging Face does).
  Tensor bias = ((mask.scalar(1.0) - mask) * mask.scalar(-FLT_MAX)).reshape({batch, Expr(1), Expr(1), seq});
  for (const Layer& l : layers) {
    Tensor q = heads_first(l.query(x), config.heads), k = heads_first(l.key(x), config.heads);
    Tensor v = heads_first(l.value(x), config.heads);
    Tensor attended = ops::scaled_dot_product_attention(q, k, v, bias);
    Tensor merged = attended.permute({0, 2, 1, 3}).reshape(hidden_shape);
    x = l.attn_norm(x + l.attn_out(merged));
    x = l.out_norm(x + l.down(nn::activate(l.up(x), config.activation == "gelu_new" ? "gelu_tanh" : config.activation)));
  }
  return x;
}

Tensor Bert::mean_pool(const Tensor& hidden, const Tensor& mask, bool normalize) {
  Tensor m = mask.unsqueeze(-1);  // [batch, seq, 1]
  Tensor summed = ops::sum(hidden * m, {1});
  Tensor count = ops::clamp(ops::sum(m, {1}), 1e-9, std::nullopt);
  Tensor mean = summed / count;
  if (!normalize) return mean;
  Tensor norm = ops::clamp(ops::sum(mean * mean, {-1}, true).sqrt(), 1e-12, std::nullopt);
  return mean / norm;
}

}  // namespace lumen::models
