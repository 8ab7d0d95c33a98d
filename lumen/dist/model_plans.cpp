#include "lumen/dist/model_plans.h"

#include "lumen/core/error.h"

namespace lumen::dist {

namespace {

void require_divides(const char* model, int shards, int64_t value, const char* what) {
  if (shards < 1) fail("dist: ", model, ": the rank count must be at least 1, got ", shards);
  if (value % shards != 0) {
    fail("dist: ", model, ": tensor parallel over ", shards, " ranks needs ", what, " (", value, ") to be a multiple of ",
         shards, "; use a rank count that divides it");
  }
}

}  // namespace

ParallelSpec llama_tensor_parallel(const models::LlamaConfig& c, int shards) {
  c.validate();
  require_divides("llama", shards, c.heads, "the attention heads");
  require_divides("llama", shards, c.hidden, "the MLP width (intermediate_size)");
  bool split_kv = c.kv_heads % shards == 0;
  if (!split_kv && shards % c.kv_heads != 0) {
    fail("dist: llama: ", c.kv_heads, " key/value heads neither split over ", shards, " ranks nor divide them");
  }
  ParallelSpec s;
  s.shards = shards;
  auto split = [&](const std::string& name, int axis) { s.shardings[name] = Sharding::split(axis); };
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    split(p + "self_attn.q_proj.weight", 0);
    if (c.qkv_bias) split(p + "self_attn.q_proj.bias", 0);
    for (const char* kv : {"k_proj", "v_proj"}) {
      if (!split_kv) continue;
      split(p + "self_attn." + kv + ".weight", 0);
      if (c.qkv_bias) split(p + "self_attn." + kv + ".bias", 0);
    }
    if (split_kv) {
      split(models::Llama::cache_name(i, true), 1);
      split(models::Llama::cache_name(i, false), 1);
    }
    split(p + "self_attn.o_proj.weight", 1);
    for (const char* m : {"gate_proj", "up_proj"}) {
      split(p + "mlp." + m + ".weight", 0);
      if (c.mlp_bias) split(p + "mlp." + m + ".bias", 0);
    }
    split(p + "mlp.down_proj.weight", 1);
  }
  if (!c.tie_embeddings && c.vocab % shards == 0) split("lm_head.weight", 0);
  return s;
}

std::vector<int64_t> pipeline_layer_bounds(int64_t layers, int stages) {
  if (stages < 1) fail("dist: a pipeline needs at least one stage, got ", stages);
  if (layers < stages) fail("dist: a pipeline of ", stages, " stages needs at least as many layers; the model has ", layers);
  std::vector<int64_t> bounds;
  for (int s = 0; s <= stages; ++s) bounds.push_back(layers * s / stages);
  return bounds;
}

ParallelSpec llama_pipeline(const models::LlamaConfig& c, int stages) {
  c.validate();
  std::vector<int64_t> bounds = pipeline_layer_bounds(c.layers, stages);
  ParallelSpec s;
  s.stages = stages;
  s.stage_of["model.embed_tokens.weight"] = 0;
  for (int st = 0; st < stages; ++st) {
    for (int64_t i = bounds[static_cast<size_t>(st)]; i < bounds[static_cast<size_t>(st) + 1]; ++i) {
      std::string p = "model.layers." + std::to_string(i) + ".";
      for (const char* w : {"input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.weight",
                            "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
                            "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"}) {
        s.stage_of[p + w] = st;
      }
      s.stage_of[models::Llama::cache_name(i, true)] = st;
      s.stage_of[models::Llama::cache_name(i, false)] = st;
    }
  }
  s.stage_of["model.norm.weight"] = stages - 1;
  if (!c.tie_embeddings) s.stage_of["lm_head.weight"] = stages - 1;
  return s;
}

ParallelSpec bert_tensor_parallel(const models::BertConfig& c, int shards) {
  c.validate();
  require_divides("bert", shards, c.heads, "the attention heads");
  require_divides("bert", shards, c.hidden, "the MLP width (intermediate_size)");
  ParallelSpec s;
  s.shards = shards;
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string p = "encoder.layer." + std::to_string(i) + ".";
    for (const char* col : {"attention.self.query", "attention.self.key", "attention.self.value", "intermediate.dense"}) {
      s.shardings[p + col + ".weight"] = Sharding::split(0);
      s.shardings[p + col + ".bias"] = Sharding::split(0);
    }
    s.shardings[p + "attention.output.dense.weight"] = Sharding::split(1);
    s.shardings[p + "output.dense.weight"] = Sharding::split(1);
  }
  return s;
}

ParallelSpec data_parallel(const std::vector<std::string>& batch_inputs, int shards) {
  if (shards < 1) fail("dist: data parallel needs at least one rank, got ", shards);
  ParallelSpec s;
  s.shards = shards;
  for (const std::string& name : batch_inputs) s.shardings[name] = Sharding::split(0);
  return s;
}

}  // namespace lumen::dist
