// PagedLlama against LlamaRunner on the same random tiny model: prompts
// prefilled in chunks and two sequences decoded in one batch, their blocks
// interleaved in the pool, give the logits of each sequence run alone
// through the contiguous cache (full attention, grouped heads, and a
// sliding window shorter than the sequences).
#include "lumen/serve/paged_llama.h"

#include <gtest/gtest.h>

#include "lumen/core/error.h"
#include "lumen/models/llama_runner.h"
#include "lumen/models/sampling.h"
#include "tests/serve/tiny_models.h"

namespace lumen::serve {
namespace {

constexpr float kTolerance = 1e-4f;

void expect_near(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  float worst = 0;
  size_t bad = 0;  // NaN included: it compares false
  for (size_t i = 0; i < got.size(); ++i) {
    float d = std::abs(got[i] - want[i]);
    if (!(d <= kTolerance)) ++bad;
    if (d > worst) worst = d;
  }
  EXPECT_EQ(bad, 0u) << what << ": largest difference " << worst;
}

struct Reference {
  std::vector<float> prefill;                 // logits after the prompt
  std::vector<int32_t> tokens;                // greedy continuation
  std::vector<std::vector<float>> decoded;    // logits after feeding each of them
};

Reference run_alone(models::LlamaRunner& runner, const std::vector<int32_t>& prompt, int steps) {
  Reference r;
  runner.reset();
  r.prefill = runner.forward(prompt);
  std::vector<float> logits = r.prefill;
  for (int i = 0; i < steps; ++i) {
    r.tokens.push_back(models::argmax(logits));
    logits = runner.forward({r.tokens.back()});
    r.decoded.push_back(logits);
  }
  return r;
}

void check_against_runner(const std::string& config_json) {
  models::LlamaConfig c = models::LlamaConfig::from_json(config_json);
  auto weights = testing::llama_weights(c, 7);
  models::LlamaRunnerOptions ro;
  ro.capacity = 64;
  ro.compile.tuning_cache = false;
  models::LlamaRunner runner(c, weights, ro);
  PagedLlamaOptions po;
  po.block_size = 4;
  po.blocks = 40;
  po.context = 64;
  po.compile.tuning_cache = false;
  PagedLlama paged(c, weights, po);

  const int steps = 9;
  std::vector<int32_t> prompt_a{3, 17, 5, 60, 41, 9, 0, 62, 7, 33, 21}, prompt_b{12, 1, 44, 8, 30, 2};
  Reference a = run_alone(runner, prompt_a, steps), b = run_alone(runner, prompt_b, steps);

  PagedKvCache& cache = paged.cache();
  BlockTable ta, tb;
  ASSERT_TRUE(cache.grow(ta, 7));
  ASSERT_TRUE(cache.grow(tb, 6));  // b's blocks sit between a's
  ASSERT_TRUE(cache.grow(ta, 11));
  paged.prefill({prompt_a.begin(), prompt_a.begin() + 7}, 0, ta);  // a in two chunks
  expect_near(paged.prefill({prompt_a.begin() + 7, prompt_a.end()}, 7, ta), a.prefill, "prefill a");
  expect_near(paged.prefill(prompt_b, 0, tb), b.prefill, "prefill b");
  int64_t pa = 11, pb = 6;
  int64_t vocab = c.vocab;
  for (int i = 0; i < steps; ++i) {
    ASSERT_TRUE(cache.grow(ta, pa + 1));
    ASSERT_TRUE(cache.grow(tb, pb + 1));
    const Array& logits = paged.decode({{a.tokens[i], pa++, &ta}, {b.tokens[i], pb++, &tb}});
    ASSERT_EQ(logits.shape(), (std::vector<int64_t>{2, 1, vocab}));
    std::vector<float> all = logits.to_floats();
    expect_near({all.begin(), all.begin() + vocab}, a.decoded[i], "decode a, step " + std::to_string(i));
    expect_near({all.begin() + vocab, all.end()}, b.decoded[i], "decode b, step " + std::to_string(i));
  }
  // b alone in a batch of one, continuing from where both were.
  ASSERT_TRUE(cache.grow(tb, pb + 1));
  EXPECT_EQ(paged.decode({{1, pb, &tb}}).shape()[0], 1);
  EXPECT_THROW(paged.decode({{99, pb, &tb}}), Error);  // outside the vocabulary
  EXPECT_THROW(paged.decode({{1, 200, &tb}}), Error);  // no block for the position
}

TEST(PagedLlamaTest, MatchesTheContiguousCacheWithGroupedHeads) {
  check_against_runner(R"({"model_type": "llama", "vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 48, "max_position_embeddings": 64})");
}

TEST(PagedLlamaTest, MatchesTheContiguousCacheWithASlidingWindow) {
  check_against_runner(R"({"model_type": "mistral", "vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 48, "max_position_embeddings": 64,
      "sliding_window": 5})");
}

TEST(PagedLlamaTest, MatchesTheContiguousCacheForQwen3WithYarn) {  // q/k norms per head; rotary tables scaled per row
  check_against_runner(R"({"model_type": "qwen3", "vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12, "intermediate_size": 48,
      "max_position_embeddings": 64, "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0,
      "original_max_position_embeddings": 16}})");
}

TEST(PagedLlamaTest, RefusesWhatPagedAttentionDoesNotComputeByName) {
  auto refusal = [](const std::string& json) {
    models::LlamaConfig c = models::LlamaConfig::from_json(json);
    try {
      PagedLlamaOptions po;
      po.block_size = 4;
      po.blocks = 40;
      PagedLlama paged(c, testing::llama_weights(c, 7), po);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string gemma2 = refusal(R"({"model_type": "gemma2", "vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "intermediate_size": 48,
      "attn_logit_softcapping": 50.0})");
  EXPECT_NE(gemma2.find("gemma2's attention (soft-capped scores, query_pre_attn_scalar) is not in the paged server"),
            std::string::npos) << gemma2;
  std::string dynamic = refusal(R"({"model_type": "llama", "vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 48, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}})");
  EXPECT_NE(dynamic.find("dynamic rope scaling follows one sequence's length"), std::string::npos) << dynamic;
}

}  // namespace
}  // namespace lumen::serve
