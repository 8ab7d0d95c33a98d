// Choosing the next token from logits: greedy, or sampling with temperature,
// top-k and top-p (nucleus) filtering, from a seeded generator so a run is
// reproducible.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace lumen::models {

struct SamplingOptions {
  double temperature = 0.0;  // 0: greedy (argmax)
  int64_t top_k = 0;         // 0: no limit
  double top_p = 1.0;        // 1: no nucleus cut
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplingOptions& options = {});
  int32_t operator()(const std::vector<float>& logits);
  const SamplingOptions& options() const { return options_; }

 private:
  SamplingOptions options_;
  std::mt19937_64 rng_;
};

// The index of the largest logit (the first one on ties); NaN never wins.
int32_t argmax(const std::vector<float>& logits);

}  // namespace lumen::models
