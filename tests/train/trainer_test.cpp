// lumen/train in C++: SGD on a quadratic has a closed form, AdamW's first
// step moves every weight by lr (sign of the gradient), checkpoints round
// trip and a truncated one is an error that changes nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "lumen/train/trainer.h"

namespace lumen::train {
namespace {

Tensor total(Tensor t) {
  while (t.rank() > 0) t = t.sum_reduce(0);
  return t;
}

// loss = sum((w - target)^2) / 2: the gradient is w - target.
Trainer quadratic(Graph& g, OptimizerKind kind, double lr) {
  Tensor w = g.state("w", {Expr(3)});
  Tensor target = g.input("target", {Expr(3)});
  Tensor d = w - target;
  TrainerOptions options;
  options.optimizer.kind = kind;
  options.lr = lr;
  options.compile.backend = Backend::Interp;
  return Trainer(g, total(d * d) * 0.5, {w}, options);
}

TEST(Trainer, SgdOnAQuadraticHasAClosedForm) {
  Graph g;
  Trainer t = quadratic(g, OptimizerKind::Sgd, 0.25);
  t.set_parameter("w", Array::from_floats({1, 2, 3}, {3}));
  Array target = Array::from_floats({0, 0, 1}, {3});
  float loss = t.step({{"target", target}});
  EXPECT_FLOAT_EQ(loss, 0.5f * (1 + 4 + 4));
  // w <- w - lr (w - target) = 0.75 w + 0.25 target
  EXPECT_EQ(t.parameter("w").to_floats(), (std::vector<float>{0.75f, 1.5f, 2.5f}));
  EXPECT_EQ(t.steps(), 1);
}

TEST(Trainer, AdamWFirstStepMovesByTheLearningRate) {
  Graph g;
  Trainer t = quadratic(g, OptimizerKind::AdamW, 0.1);
  t.set_parameter("w", Array::from_floats({1, -2, 3}, {3}));
  t.step({{"target", Array::from_floats({0, 0, 5}, {3})}});
  std::vector<float> w = t.parameter("w").to_floats();
  EXPECT_NEAR(w[0], 0.9f, 1e-6);
  EXPECT_NEAR(w[1], -1.9f, 1e-6);
  EXPECT_NEAR(w[2], 3.1f, 1e-6);
}

TEST(Trainer, TruncatedCheckpointIsAnErrorAndChangesNothing) {
  Graph g1, g2;
  Trainer a = quadratic(g1, OptimizerKind::AdamW, 0.1);
  a.set_parameter("w", Array::from_floats({1, 2, 3}, {3}));
  a.step({{"target", Array::from_floats({0, 0, 0}, {3})}});
  std::string path = testing::TempDir() + "trainer_test.safetensors";
  a.save(path);
  Trainer b = quadratic(g2, OptimizerKind::AdamW, 0.1);
  b.load(path);
  EXPECT_EQ(b.parameter("w").to_floats(), a.parameter("w").to_floats());
  EXPECT_EQ(b.parameter("w.exp_avg_sq").to_floats(), a.parameter("w.exp_avg_sq").to_floats());
  EXPECT_EQ(b.steps(), 1);

  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string cut = testing::TempDir() + "trainer_test_cut.safetensors";
  {
    std::ofstream out(cut, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 8));
  }
  Graph g3;
  Trainer c = quadratic(g3, OptimizerKind::AdamW, 0.1);
  c.set_parameter("w", Array::from_floats({7, 7, 7}, {3}));
  EXPECT_THROW(c.load(cut), Error);
  EXPECT_EQ(c.parameter("w").to_floats(), (std::vector<float>{7, 7, 7}));
  EXPECT_EQ(c.steps(), 0);
  std::remove(path.c_str());
  std::remove(cut.c_str());
}

}  // namespace
}  // namespace lumen::train
