// Tensor- and pipeline-parallel Llama under mpirun (2 ranks on loopback): the
// logits of prefill and of 32 greedy decode steps equal a single-rank
// LlamaRunner's within 1e-4, for a multi-head and two grouped-query configs.
#include <gtest/gtest.h>

#include "dist_test_util.h"
#include "lumen/core/error.h"
#include "lumen/dist/dist_llama_runner.h"
#include "lumen/dist/model_plans.h"

using namespace lumen;
using namespace lumen::dist;

namespace {

models::LlamaConfig config(int64_t heads, int64_t kv_heads, bool tied) {
  std::string json = R"({"model_type": "llama", "vocab_size": 96, "hidden_size": 32, "num_hidden_layers": 2,
      "num_attention_heads": )" + std::to_string(heads) + R"(, "num_key_value_heads": )" + std::to_string(kv_heads) +
                     R"(, "intermediate_size": 48, "max_position_embeddings": 128, "tie_word_embeddings": )" +
                     (tied ? "true" : "false") + "}";
  return models::LlamaConfig::from_json(json);
}

std::vector<int32_t> prompt(int n, int vocab) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back((i * 37 + 11) % vocab);
  return p;
}

void expect_matches_single_rank(const models::LlamaConfig& c, LlamaParallel plan, int prompt_tokens, int64_t chunk = 0) {
  auto weights = test_util::random_llama_weights(c, 7);
  models::LlamaRunnerOptions o;
  o.capacity = 96;
  models::LlamaRunner single(c, weights, o);
  DistLlamaOptions d;
  d.runner = o;
  d.parallel = plan;
  d.prefill_chunk = chunk;
  DistLlamaRunner dist(c, weights, d);
  ASSERT_EQ(dist.spec().ranks(), 2);
  // The communication a plan should need, and no more (no weight or cache gathered).
  int count[3] = {0, 0, 0};
  for (const CommPoint& cp : dist.decode_program().sharded().comms) ++count[static_cast<int>(cp.kind)];
  if (plan == LlamaParallel::Tensor) {
    EXPECT_EQ(count[0], 2 * c.layers) << "one all-reduce per block half: " << dist.decode_program().sharded().summary();
    EXPECT_EQ(count[1], c.tie_embeddings ? 0 : 1) << "only the vocabulary-split logits are gathered";
  } else {
    EXPECT_EQ(count[0] + count[1], 0);
    EXPECT_EQ(count[2], 1) << "one activation crosses the stage boundary: " << dist.decode_program().report();
  }

  std::vector<int32_t> p = prompt(prompt_tokens, static_cast<int>(c.vocab));
  Array all_single = single.forward_all(p), all_dist = dist.forward_all(p);
  EXPECT_LT(test_util::max_abs_diff(all_single.to_floats(), all_dist.to_floats()), 1e-4f) << "prefill, every position";

  single.reset();
  dist.reset();
  std::vector<float> a = single.forward(p), b = dist.forward(p);
  EXPECT_LT(test_util::max_abs_diff(a, b), 1e-4f) << "prefill, last position";
  int agree = 0;
  for (int step = 0; step < 32; ++step) {
    int32_t next = models::argmax(a);
    agree += next == models::argmax(b) ? 1 : 0;
    a = single.forward({next});
    b = dist.forward({next});
    ASSERT_LT(test_util::max_abs_diff(a, b), 1e-4f) << "decode step " << step;
  }
  EXPECT_EQ(agree, 32);
  EXPECT_EQ(dist.position(), single.position());
}

}  // namespace

TEST(DistLlama, TensorParallelMultiHead) { expect_matches_single_rank(config(4, 4, false), LlamaParallel::Tensor, 21); }
TEST(DistLlama, TensorParallelGroupedQuery) { expect_matches_single_rank(config(4, 2, true), LlamaParallel::Tensor, 21); }
TEST(DistLlama, TensorParallelKvHeadsReplicated) { expect_matches_single_rank(config(4, 1, false), LlamaParallel::Tensor, 9); }
TEST(DistLlama, PipelineMultiHead) { expect_matches_single_rank(config(4, 4, true), LlamaParallel::Pipeline, 21); }
TEST(DistLlama, PipelineGroupedQueryChunkedPrefill) {
  expect_matches_single_rank(config(4, 2, false), LlamaParallel::Pipeline, 40, 16);
}

TEST(DistLlama, TensorPlanSplitsTheRightWeights) {
  ParallelSpec s = llama_tensor_parallel(config(4, 2, false), 2);
  EXPECT_EQ(s.shardings.at("model.layers.0.self_attn.q_proj.weight"), Sharding::split(0));
  EXPECT_EQ(s.shardings.at("model.layers.1.self_attn.o_proj.weight"), Sharding::split(1));
  EXPECT_EQ(s.shardings.at("model.layers.1.mlp.down_proj.weight"), Sharding::split(1));
  EXPECT_EQ(s.shardings.at(models::Llama::cache_name(0, true)), Sharding::split(1));
  EXPECT_EQ(s.shardings.at("lm_head.weight"), Sharding::split(0));
  ParallelSpec r = llama_tensor_parallel(config(4, 1, true), 2);
  EXPECT_FALSE(r.shardings.count("model.layers.0.self_attn.k_proj.weight")) << "one kv head over two ranks: replicated";
  EXPECT_FALSE(r.shardings.count("lm_head.weight"));
}

TEST(DistLlama, BadRankCountIsAClearError) {
  try {  // 3 heads do not split over 2 ranks: every rank refuses before communicating
    DistLlamaRunner dist(config(3, 3, false), test_util::random_llama_weights(config(3, 3, false), 1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attention heads (3) to be a multiple of 2"), std::string::npos) << e.what();
  }
}

TEST(DistLlama, DifferentModelsOnTheRanksAreRefused) {
  int rank = world().rank();
  models::LlamaConfig c = config(4, 4, false);
  if (rank == 1) c.hidden = 64;  // rank 1 loads another model
  try {
    DistLlamaRunner dist(c, test_util::random_llama_weights(c, 3));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("built a different graph or plan than rank 0"), std::string::npos) << e.what();
  }
}
