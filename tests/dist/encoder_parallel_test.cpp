// The BERT-style sentence encoder under 2-rank tensor parallelism: pooled
// (mean, normalized) embeddings and hidden states equal one rank's within 1e-4.
#include <gtest/gtest.h>

#include "dist_test_util.h"
#include "lumen/dist/dist_program.h"
#include "lumen/dist/model_plans.h"

using namespace lumen;
using namespace lumen::dist;

namespace {

models::BertConfig bert() {
  return models::BertConfig::from_json(R"({"vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 64})");
}

struct Built {
  Graph g;
  Tensor pooled, hidden;
};

std::unique_ptr<Built> build(const models::BertConfig& c, io::WeightStore& weights) {
  auto b = std::make_unique<Built>();
  nn::ScopedParameterSource source(weights);
  models::Bert model(b->g, c);
  Expr batch = b->g.dim("batch"), seq = Expr(16) * b->g.dim("seq_blocks");
  Tensor ids = b->g.input("ids", {batch, seq}, DType::I32);
  Tensor mask = b->g.input("mask", {batch, seq});
  b->hidden = model(ids, mask);
  b->pooled = models::Bert::pool(b->hidden, mask, models::Pooling::Mean, true);
  return b;
}

}  // namespace

TEST(DistEncoder, TensorParallelEmbeddingsMatchOneRank) {
  models::BertConfig c = bert();
  auto weights = test_util::random_bert_weights(c, 5);
  auto built = build(c, *weights);
  Program single = compile(built->g, {built->pooled, built->hidden});
  DistProgram dist(built->g, {built->pooled, built->hidden}, bert_tensor_parallel(c, 2));
  for (const auto& [name, array] : weights->inputs()) {
    if (built->g.find_input(name) < 0) continue;
    single.set(name, array);
    dist.set(name, array);
  }
  EXPECT_GE(dist.sharded().comms.size(), 4u) << "two all-reduces per layer: " << dist.sharded().summary();
  for (int64_t batch : {1, 3}) {
    std::vector<int32_t> ids;
    std::vector<float> mask;
    for (int64_t b = 0; b < batch; ++b) {
      for (int t = 0; t < 32; ++t) {
        bool real = t < 20 + 5 * b;
        ids.push_back(real ? static_cast<int32_t>((t * 7 + b * 3 + 1) % c.vocab) : 0);
        mask.push_back(real ? 1.0f : 0.0f);
      }
    }
    Array i = Array::from_ints(ids, {batch, 32}), m = Array::from_floats(mask, {batch, 32});
    single.set("ids", i);
    single.set("mask", m);
    single.bind("seq_blocks", 2);
    single.run();
    dist.set("ids", i);
    dist.set("mask", m);
    dist.bind("seq_blocks", 2);
    dist.run();
    EXPECT_LT(test_util::max_abs_diff(single.get("out0").to_floats(), dist.get("out0").to_floats()), 1e-4f) << "pooled";
    EXPECT_LT(test_util::max_abs_diff(single.get("out1").to_floats(), dist.get("out1").to_floats()), 1e-4f) << "hidden";
  }
}

TEST(DistEncoder, HeadsTheRanksDoNotDivideAreRefused) {
  models::BertConfig c = bert();
  c.heads = 1;
  EXPECT_THROW(bert_tensor_parallel(c, 2), Error);
}
