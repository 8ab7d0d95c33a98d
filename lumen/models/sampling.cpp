#include "lumen/models/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lumen/core/error.h"

namespace lumen::models {

Sampler::Sampler(const SamplingOptions& options) : options_(options), rng_(options.seed) {
  if (options.temperature < 0 || !std::isfinite(options.temperature)) fail("sampling: temperature must be >= 0, got ", options.temperature);
  if (options.top_k < 0) fail("sampling: top_k must be >= 0, got ", options.top_k);
  if (!(options.top_p > 0 && options.top_p <= 1)) fail("sampling: top_p must be in (0, 1], got ", options.top_p);
}

int32_t argmax(const std::vector<float>& logits) {
  if (logits.empty()) fail("sampling: no logits");
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best] || std::isnan(logits[best])) best = i;
  }
  return static_cast<int32_t>(best);
}

int32_t Sampler::operator()(const std::vector<float>& logits) {
  if (options_.temperature == 0) return argmax(logits);
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  // Candidates by descending logit (stable: lower ids first on ties).
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)]; });
  size_t keep = order.size();
  if (options_.top_k > 0) keep = std::min(keep, static_cast<size_t>(options_.top_k));
  double top = logits[static_cast<size_t>(order[0])];
  std::vector<double> p(keep);
  double total = 0;
  for (size_t i = 0; i < keep; ++i) {
    p[i] = std::exp((logits[static_cast<size_t>(order[i])] - top) / options_.temperature);
    total += p[i];
  }
  if (options_.top_p < 1) {  // the smallest prefix whose probability reaches top_p
    double mass = 0;
    for (size_t i = 0; i < keep; ++i) {
      mass += p[i] / total;
      if (mass >= options_.top_p) {
        keep = i + 1;
        break;
      }
    }
    p.resize(keep);
  }
  std::discrete_distribution<size_t> pick(p.begin(), p.end());
  return order[pick(rng_)];
}

}  // namespace lumen::models
