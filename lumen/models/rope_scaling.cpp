#include "lumen/models/rope_scaling.h"

#include <algorithm>
#include <cmath>

#include "lumen/ops/elementwise.h"
#include "lumen/ops/math.h"

namespace lumen::models {

namespace {

// theta^(-2i/d) for i = 0 .. d/2 - 1 with theta a [1, 1] tensor or a number.
Tensor powers(Graph& g, int64_t head_dim, const Tensor& log2_theta) {
  Shape freq_shape{Expr(1), Expr(head_dim / 2)};
  Tensor i = g.iota(loop_index(freq_shape, 1), freq_shape, DType::I32).cast(DType::F32);
  return (i * (-2.0 / static_cast<double>(head_dim)) * log2_theta).exp2();
}

// Llama 3.1: wavelengths above original/low_freq_factor divided by factor,
// below original/high_freq_factor kept, smoothly mixed between.
Tensor llama3(const RopeScaling& s, const Tensor& inv) {
  double original = static_cast<double>(s.original_max_position);
  Tensor wavelen = (2.0 * M_PI) / inv;
  Tensor low = ops::gt(wavelen, ops::scalar_like(wavelen, original / s.low_freq_factor, DType::F32));
  Tensor scaled = ops::where(low, inv / s.factor, inv);
  Tensor smooth = (original / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  Tensor smoothed = (1.0 - smooth) * scaled / s.factor + smooth * scaled;
  Tensor high = ops::lt(wavelen, ops::scalar_like(wavelen, original / s.high_freq_factor, DType::F32));
  Tensor medium = ops::logical_and(ops::logical_not(high), ops::logical_not(low));
  return ops::where(medium, smoothed, scaled);
}

// YaRN: frequency i extrapolated (kept) below the dimension where a
// wavelength turns beta_fast times over the original context, interpolated
// (divided by factor) above the one for beta_slow, linearly ramped between.
Tensor yarn(Graph& g, const RopeScaling& s, double theta, int64_t head_dim, const Tensor& inv) {
  auto correction_dim = [&](double rotations) {
    return head_dim * std::log(static_cast<double>(s.original_max_position) / (rotations * 2 * M_PI)) / (2 * std::log(theta));
  };
  double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(head_dim - 1));
  if (low == high) high += 0.001;  // as transformers: no zero-width ramp
  Shape freq_shape{Expr(1), Expr(head_dim / 2)};
  Tensor i = g.iota(loop_index(freq_shape, 1), freq_shape, DType::I32).cast(DType::F32);
  Tensor ramp = ops::clamp((i - low) / (high - low), 0.0, 1.0);
  Tensor extrapolated = 1.0 - ramp;
  return (inv / s.factor) * (1.0 - extrapolated) + inv * extrapolated;
}

double yarn_mscale(double factor, double mscale) { return factor <= 1 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0; }

}  // namespace

double rope_attention_factor(const RopeScaling& s) {
  if (s.type != "yarn") return 1.0;
  if (s.attention_factor > 0) return s.attention_factor;
  if (s.mscale > 0 && s.mscale_all_dim > 0) return yarn_mscale(s.factor, s.mscale) / yarn_mscale(s.factor, s.mscale_all_dim);
  return yarn_mscale(s.factor, 1.0);
}

Tensor rope_inverse_frequencies(Graph& g, const LlamaConfig& c, const std::optional<Tensor>& divisors, const Expr& length) {
  const RopeScaling& s = c.rope_scaling;
  Tensor log2_theta = g.constant(std::log2(c.rope_theta)).reshape({Expr(1), Expr(1)});
  if (s.type == "dynamic") {
    // base · (factor · L / max_position - (factor - 1))^(d / (d - 2)), L = max(length, max_position)
    double max_position = static_cast<double>(c.max_position);
    Tensor seen = g.iota(max(length, Expr(c.max_position)), {Expr(1), Expr(1)}, DType::I32).cast(DType::F32);
    Tensor growth = ops::log2(seen * (s.factor / max_position) - (s.factor - 1.0));
    log2_theta = log2_theta + growth * (static_cast<double>(c.head_dim) / static_cast<double>(c.head_dim - 2));
  }
  Tensor inv = powers(g, c.head_dim, log2_theta);
  if (divisors) inv = inv / divisors->reshape({Expr(1), Expr(c.head_dim / 2)});
  if (s.type == "linear") return inv / s.factor;
  if (s.type == "llama3") return llama3(s, inv);
  if (s.type == "yarn") return yarn(g, s, c.rope_theta, c.head_dim, inv);
  return inv;
}

}  // namespace lumen::models
