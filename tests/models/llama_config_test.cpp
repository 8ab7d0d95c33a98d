// LlamaConfig from config.json: hyper-parameters validated with the key, the
// value and the allowed range in the message; sliding windows, biases and
// eos lists read as transformers reads them. unused_weights: every tensor of
// a checkpoint is read by the model built from it, or named.
#include <gtest/gtest.h>

#include <cmath>

#include "lumen/core/error.h"
#include "lumen/io/weight_store.h"
#include "lumen/models/llama.h"
#include "lumen/models/unused_weights.h"

namespace lumen::models {
namespace {

std::string config(const std::string& extra, const std::string& type = "llama") {
  return R"({"model_type": ")" + type + R"(", "vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 3,
             "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 24)" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

std::string error_of(const std::string& text) {
  try {
    LlamaConfig::from_json(text, "c.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LlamaConfig, BadHyperParametersNameKeyValueAndRange) {
  EXPECT_NE(error_of(config(R"("rms_norm_eps": -1e-5)")).find("rms_norm_eps is -1e-05; it must be a finite number greater than 0"),
            std::string::npos);
  EXPECT_NE(error_of(config(R"("rms_norm_eps": 0)")).find("rms_norm_eps is 0"), std::string::npos);
  EXPECT_NE(error_of(config(R"("rope_theta": 0)")).find("rope_theta is 0; it must be a finite number greater than 0"),
            std::string::npos);
  EXPECT_NE(error_of(config(R"("rope_theta": 1e999)")).find("not valid JSON ([json.exception.out_of_range.406] number overflow"),
            std::string::npos);
  EXPECT_NE(error_of(config(R"("rope_parameters": {"rope_theta": -1.0, "rope_type": "default"})")).find("rope_theta is -1"),
            std::string::npos);
  EXPECT_NE(error_of(config(R"("num_key_value_heads": 3)")).find("num_attention_heads (4) is not divisible by num_key_value_heads (3)"),
            std::string::npos);
  EXPECT_NE(error_of(config(R"("num_key_value_heads": 0)")).find("num_key_value_heads is 0"), std::string::npos);
  EXPECT_NE(error_of(config(R"("max_position_embeddings": -1)")).find("max_position_embeddings is -1"), std::string::npos);
  EXPECT_NE(error_of(config(R"("head_dim": 5)")).find("head_dim 5 must be even"), std::string::npos);
  EXPECT_NE(error_of(config(R"("rms_norm_eps": "tiny")")).find("'rms_norm_eps' must be a number, got \"tiny\""), std::string::npos);
  EXPECT_NE(error_of(config(R"("eos_token_id": -3)")).find("eos_token_id holds -3"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "llama", "vocab_size": 32})").find("needs an integer 'hidden_size'"), std::string::npos);
  EXPECT_EQ(error_of(config("")), "");
}

TEST(LlamaConfig, SlidingWindowsAsTransformersReadsThem) {
  LlamaConfig mistral = LlamaConfig::from_json(config(R"("sliding_window": 4)", "mistral"));
  EXPECT_EQ(mistral.sliding_window, 4);
  for (int64_t l = 0; l < 3; ++l) EXPECT_TRUE(mistral.windowed(l));
  EXPECT_FALSE(LlamaConfig::from_json(config(R"("sliding_window": null)", "mistral")).windowed(0));
  // Qwen2: only with use_sliding_window, from max_window_layers on, or as layer_types says.
  EXPECT_FALSE(LlamaConfig::from_json(config(R"("sliding_window": 4, "max_window_layers": 0)", "qwen2")).windowed(2));
  LlamaConfig q = LlamaConfig::from_json(config(R"("use_sliding_window": true, "sliding_window": 4, "max_window_layers": 1)", "qwen2"));
  EXPECT_FALSE(q.windowed(0));
  EXPECT_TRUE(q.windowed(1) && q.windowed(2));
  LlamaConfig t = LlamaConfig::from_json(config(
      R"("use_sliding_window": true, "sliding_window": 4, "layer_types": ["sliding_attention", "full_attention", "sliding_attention"])",
      "qwen2"));
  EXPECT_TRUE(t.windowed(0) && !t.windowed(1) && t.windowed(2));
  EXPECT_NE(error_of(config(R"("use_sliding_window": true, "sliding_window": 4, "layer_types": ["chunked_attention"])", "qwen2"))
                .find("layer_types holds 'chunked_attention'"),
            std::string::npos);
  EXPECT_NE(error_of(config(R"("use_sliding_window": true, "sliding_window": 4, "layer_types": ["full_attention"])", "qwen2"))
                .find("layer_types lists 1 layers but num_hidden_layers is 3"),
            std::string::npos);
}

TEST(LlamaConfig, BiasesAndEosLists) {
  LlamaConfig llama = LlamaConfig::from_json(config(R"("attention_bias": true, "mlp_bias": true, "eos_token_id": [7, 9])"));
  EXPECT_TRUE(llama.qkv_bias && llama.out_bias && llama.mlp_bias);
  EXPECT_TRUE(llama.is_eos(7) && llama.is_eos(9) && !llama.is_eos(8));
  LlamaConfig qwen = LlamaConfig::from_json(config("", "qwen2"));
  EXPECT_TRUE(qwen.qkv_bias && !qwen.out_bias);  // as Hugging Face's Qwen2Attention
  EXPECT_FALSE(LlamaConfig::from_json(config(R"("attention_bias": true)", "mistral")).qkv_bias);  // Mistral has none
  EXPECT_TRUE(LlamaConfig::from_json(config(R"("eos_token_id": 5)")).is_eos(5));
}

TEST(UnusedWeights, EveryCheckpointTensorIsReadOrNamed) {
  LlamaConfig c = LlamaConfig::from_json(config(R"("num_hidden_layers": 1, "tie_word_embeddings": true)"));
  io::WeightStore store;
  store.origin = "test checkpoint";
  {  // the parameters a default source declares, as plain f32 weights
    Graph probe;
    Llama model(probe, c);
    for (NodeId id : probe.input_ids()) {
      const Node& n = probe.node(id);
      std::vector<int64_t> shape;
      for (const Expr& d : n.shape) shape.push_back(d.value());
      store.add(n.name, {io::WeightFormat::Plain, shape, Array(DType::F32, shape), {}, {}, n.name});
    }
  }
  store.add("model.layers.0.self_attn.o_proj.bias", {io::WeightFormat::Plain, {16}, Array(DType::F32, {16}), {}, {}, "bias"});
  Graph g;
  {
    nn::ScopedParameterSource source(store);
    Llama model(g, c);
  }
  EXPECT_EQ(unused_weights(store), std::vector<std::string>{"model.layers.0.self_attn.o_proj.bias"});
  try {
    refuse_unused_weights(store, {".rotary_emb.inv_freq"}, "llama");
    FAIL() << "an unused tensor was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'test checkpoint' holds 1 tensor(s) the model built from its config does not use: "
                                         "'model.layers.0.self_attn.o_proj.bias'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(refuse_unused_weights(store, {"o_proj.bias"}, "llama"));
}

TEST(LlamaConfig, ReadsQwen3Phi3AndGemma2AsTransformersDoes) {
  LlamaConfig q = LlamaConfig::from_json(config("", "qwen3"));
  EXPECT_TRUE(q.qk_norm);
  EXPECT_EQ(q.head_dim, 128);  // Qwen3's default, not hidden / heads
  EXPECT_FALSE(q.qkv_bias);
  EXPECT_TRUE(LlamaConfig::from_json(config(R"("attention_bias": true)", "qwen3")).out_bias);
  LlamaConfig p = LlamaConfig::from_json(config(R"("sliding_window": 5)", "phi3"));
  EXPECT_TRUE(p.windowed(0) && p.windowed(2));
  EXPECT_NE(error_of(config(R"("partial_rotary_factor": 0.75)", "phi3")).find("partial_rotary_factor is 0.75"), std::string::npos);
  LlamaConfig g = LlamaConfig::from_json(config(R"("head_dim": 4, "query_pre_attn_scalar": 16, "sliding_window": 3)", "gemma2"));
  EXPECT_TRUE(g.sandwich_norms && g.norm_plus_one && g.scale_embeddings && g.tie_embeddings);
  EXPECT_DOUBLE_EQ(g.attention_scale, 0.25);
  EXPECT_EQ(g.attn_softcap, 0);  // absent: none (transformers' config class writes 50 and 30)
  EXPECT_TRUE(g.windowed(0) && !g.windowed(1) && g.windowed(2));  // every other layer from the first
  LlamaConfig capped = LlamaConfig::from_json(
      config(R"("head_dim": 4, "attn_logit_softcapping": 50.0, "final_logit_softcapping": null)", "gemma2"));
  EXPECT_EQ(capped.attn_softcap, 50);
  EXPECT_EQ(capped.final_softcap, 0);
  EXPECT_NE(error_of(config(R"("use_bidirectional_attention": true)", "gemma2")).find("use_bidirectional_attention"),
            std::string::npos);
}

}  // namespace
}  // namespace lumen::models
