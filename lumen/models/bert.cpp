#include "lumen/models/bert.h"

#include <nlohmann/json.hpp>

#include <cfloat>
#include <sstream>

#include "lumen/core/error.h"
#include "lumen/io/text_file.h"
#include "lumen/models/config_json.h"
#include "lumen/nn/mlp.h"
#include "lumen/ops/attention.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/movement.h"
#include "lumen/ops/reduce.h"

namespace lumen::models {

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Mean: return "mean";
    case Pooling::Cls: return "cls";
    case Pooling::Max: return "max";
    case Pooling::LastToken: return "lasttoken";
  }
  return "?";
}

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
  ConfigJson j(text, "bert config '" + origin + "'");
  BertConfig c;
  c.origin = j.what();
  std::string type = j.text("model_type", "bert");
  if (type != "bert") fail(j.what(), ": model_type '", type, "' is not bert");
  c.vocab = j.integer("vocab_size");
  c.dim = j.integer("hidden_size");
  c.layers = j.integer("num_hidden_layers");
  c.heads = j.integer("num_attention_heads");
  c.hidden = j.integer("intermediate_size");
  c.max_position = j.integer("max_position_embeddings", 512);
  c.type_vocab = j.integer("type_vocab_size", 2);
  c.norm_eps = j.number("layer_norm_eps", 1e-12);
  c.activation = j.text("hidden_act", "gelu");
  if (c.activation != "gelu" && c.activation != "relu" && c.activation != "gelu_new") {
    fail(j.what(), ": hidden_act '", c.activation, "' is not supported (gelu, gelu_new, relu)");
  }
  if (j.text("position_embedding_type", "absolute") != "absolute") {
    fail(j.what(), ": only absolute position embeddings are supported");
  }
  c.validate();
  return c;
}

BertConfig BertConfig::from_file(const std::string& path) {
  return from_json(io::read_text_file(path, "bert config"), path);
}

void BertConfig::validate() const {
  require_size(origin, "vocab_size", vocab);
  require_size(origin, "hidden_size", dim);
  require_size(origin, "num_hidden_layers", layers);
  require_size(origin, "num_attention_heads", heads);
  require_size(origin, "intermediate_size", hidden);
  require_size(origin, "max_position_embeddings", max_position);
  require_size(origin, "type_vocab_size", type_vocab);
  require_divides(origin, "num_attention_heads", heads, "hidden_size", dim);
  require_epsilon(origin, "layer_norm_eps", norm_eps);
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
  return pool(hidden, mask, Pooling::Mean, normalize);
}

Tensor Bert::pool(const Tensor& hidden, const Tensor& mask, Pooling mode, bool normalize) {
  Tensor m = mask.unsqueeze(-1);  // [batch, seq, 1]
  const Expr& seq = hidden.shape()[1];
  Tensor out;
  if (mode == Pooling::Mean) {
    Tensor count = ops::clamp(ops::sum(m, {1}), 1e-9, std::nullopt);
    out = ops::sum(hidden * m, {1}) / count;
  } else if (mode == Pooling::Max) {  // padding positions get -FLT_MAX, so they never win
    out = ops::amax(hidden + (m.scalar(1.0) - m) * m.scalar(-FLT_MAX), {1});
  } else if (mode == Pooling::Cls) {
    out = hidden.slice(1, Expr(0), Expr(1)).squeeze(1);
  } else {  // the last unmasked token: where mask[t] is 1 and mask[t + 1] is 0
    Tensor next = ops::concat({m.slice(1, Expr(1), seq), m.slice(1, Expr(0), Expr(1)) * m.scalar(0.0)}, 1);
    out = ops::sum(hidden * (m - next), {1});
  }
  if (!normalize) return out;
  Tensor norm = ops::clamp(ops::sum(out * out, {-1}, true).sqrt(), 1e-12, std::nullopt);
  return out / norm;
}

}  // namespace lumen::models
