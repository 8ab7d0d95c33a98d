// Data-parallel training under mpirun (2 ranks): each rank trains on its half
// of the batch; the loss curve equals a single-rank Trainer on the whole batch
// (within 1e-5 relative) and so do the parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "lumen/dist/data_parallel_trainer.h"
#include "lumen/ops/math.h"
#include "lumen/ops/reduce.h"

using namespace lumen;
using namespace lumen::dist;

namespace {

constexpr int64_t kBatch = 8, kIn = 6, kHidden = 16, kOut = 3;

struct Mlp {
  Tensor loss;
  std::vector<Tensor> params;
};

Mlp mlp(Graph& g) {
  Tensor x = g.input("x", {Expr(kBatch), Expr(kIn)});
  Tensor y = g.input("y", {Expr(kBatch), Expr(kOut)});
  Tensor w1 = g.state("w1", {Expr(kIn), Expr(kHidden)});
  Tensor b1 = g.state("b1", {Expr(kHidden)});
  Tensor w2 = g.state("w2", {Expr(kHidden), Expr(kOut)});
  Tensor h = ops::tanh(x.matmul(w1) + b1);
  Tensor d = h.matmul(w2) - y;
  return {ops::mean(d * d), {w1, b1, w2}};
}

Array random_array(std::vector<int64_t> shape, std::mt19937& rng, float scale) {
  Array a(DType::F32, shape);
  std::normal_distribution<float> n(0.0f, scale);
  for (int64_t i = 0; i < a.numel(); ++i) static_cast<float*>(a.data())[i] = n(rng);
  return a;
}

train::TrainerOptions adam() {
  train::TrainerOptions o;
  o.optimizer.kind = train::OptimizerKind::AdamW;
  o.optimizer.weight_decay = 0.01;
  o.lr = 0.01;
  return o;
}

int steps() { return std::getenv("LUMEN_SLOW") ? 200 : 50; }

}  // namespace

TEST(DataParallel, TwoRanksEqualOneRankWithTheDoubledBatch) {
  Graph g1, g2;
  Mlp a = mlp(g1), b = mlp(g2);
  train::Trainer single(g1, a.loss, a.params, adam());
  DistOptions d;
  d.bucket_bytes = 256;  // several buckets even for this small model: gradients sent while backward runs
  DataParallelTrainer parallel(g2, b.loss, b.params, {"x", "y"}, adam(), d);
  std::mt19937 init(3);
  for (const char* name : {"w1", "b1", "w2"}) {
    Array w = random_array(std::vector<int64_t>(single.parameter(name).shape()), init, 0.5f);
    single.set_parameter(name, w);
    parallel.set_parameter(name, w);
  }
  std::mt19937 data(11);
  double worst = 0;
  for (int step = 0; step < steps(); ++step) {
    Array x = random_array({kBatch, kIn}, data, 1.0f), y = random_array({kBatch, kOut}, data, 1.0f);
    float l1 = single.step({{"x", x}, {"y", y}});
    float l2 = parallel.step({{"x", x}, {"y", y}});
    worst = std::max(worst, std::fabs(static_cast<double>(l1) - l2) / std::max(1e-12, std::fabs(static_cast<double>(l1))));
  }
  EXPECT_LT(worst, 1e-5) << "loss curves differ";
  for (const char* name : {"w1", "b1", "w2"}) {
    std::vector<float> p = single.parameter(name).to_floats(), q = parallel.parameter(name).to_floats();
    for (size_t i = 0; i < p.size(); ++i) ASSERT_NEAR(p[i], q[i], 1e-5 * (1 + std::fabs(p[i]))) << name << "[" << i << "]";
  }
  const ShardedGraph& plan = parallel.program().sharded();
  EXPECT_GE(plan.comms.size(), 4u) << plan.summary();  // three gradients and the loss
  EXPECT_GT(parallel.program().segment_count(), 2u) << "the backward pass is cut at gradient buckets";
}

TEST(DataParallel, LocalBatchesAndABatchTheRanksDoNotDivide) {
  Graph g;
  Mlp m = mlp(g);
  DataParallelTrainer parallel(g, m.loss, m.params, {"x", "y"}, adam());
  std::mt19937 data(5);
  Array x = random_array({kBatch / 2, kIn}, data, 1.0f), y = random_array({kBatch / 2, kOut}, data, 1.0f);
  EXPECT_TRUE(std::isfinite(parallel.step({{"x", x}, {"y", y}}, true)));
  Graph h;
  Tensor x7 = h.input("x", {Expr(7), Expr(kIn)});
  Tensor w = h.state("w", {Expr(kIn), Expr(1)});
  EXPECT_THROW(DataParallelTrainer(h, ops::mean(x7.matmul(w)), {w}, {"x"}, adam()), Error);
}
