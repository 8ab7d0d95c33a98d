#include "lumen/ops/math.h"

#include <cmath>

#include "lumen/core/error.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/precision.h"

namespace lumen::ops {

namespace {

constexpr double kLn2 = 0.6931471805599453;
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLog10of2 = 0.30102999566398120;
constexpr double kTwoOverSqrtPi = 1.1283791670955126;
constexpr double kInvSqrt2 = 0.7071067811865476;
// Above this magnitude every float is an integer (and f16/bf16 saturate below it);
// 2^53 for f64.
double integral_bound(DType dtype) { return dtype == DType::F64 ? 9007199254740992.0 : 16777216.0; }

Tensor float_input(const Tensor& x, const char* op) {
  if (x.dtype() == DType::Bool) fail(op, ": not defined for bool tensors");
  return is_float(x.dtype()) ? x : x.cast(DType::F32);
}

Tensor c(const Tensor& like, double v) { return scalar_like(like, v, like.dtype()); }

// Computes `f` in f32 for f16/bf16 inputs and rounds once at the end, as
// PyTorch does for reduced-precision math (intermediates would lose bits).
template <typename F>
Tensor in_f32(const Tensor& x, const char* op, F&& f) {
  return compute_in_f32(float_input(x, op), f);
}

// Horner evaluation of Σ coefficients[i]·t^i.
Tensor polynomial(const Tensor& t, const std::vector<double>& coefficients) {
  Tensor acc = c(t, coefficients.back());
  for (size_t i = coefficients.size() - 1; i-- > 0;) acc = acc * t + coefficients[i];
  return acc;
}

// erfc(z) for z >= 0, fractional error < 1.2e-7 (Numerical Recipes, Chebyshev fit).
Tensor erfc_nonneg(const Tensor& z) {
  Tensor t = (z * 0.5 + 1.0).recip();
  Tensor p = polynomial(t, {-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398,
                            1.48851587, -0.82215223, 0.17087277});
  return t * exp(p - z * z);
}

// x·Φ(x) = relu(x) - a·Φ(-a) with a = |x| (Φ(x) = 1 - Φ(-a) for x >= 0): no
// select. Φ(-a) = t·2^(P(t) - a²·log2(e)/2) with t = 1/(1 + k·a) and P a
// degree-6 fit of log2(Φ(-a)/t) + a²·log2(e)/2 (relative error of Φ(-a)
// < 2e-7 for a < 5.5; beyond, where a·Φ(-a) < 1e-7, < 3e-4). One division
// and ~28 vector ops per 16 elements, where Numerical Recipes' erfc with
// a select took ~38 (gelu_erf in bench/ops_survey.py).
Tensor gelu_erf(const Tensor& x) {
  constexpr double k = 0.24;
  constexpr double kHalfLog2e = 0.5 * kLog2e;
  // at_neg = -a·t with a clamped to 64 (Φ(-a) is 0 in f32 long before), so
  // inf·0 never happens; every other step is one multiply-add.
  Tensor a = abs(x);
  Tensor t = (a * k + 1.0).recip();
  Tensor at_neg = maximum(a * -1.0, c(a, -64.0)) * t;
  Tensor p = polynomial(t, {-3.36469567, 1.22140639, 1.66360112, -2.22583306, 3.6611748, -2.57170131, 0.616047563});
  return at_neg * (a * (a * -kHalfLog2e) + p).exp2() + maximum(x, c(x, 0));
}

}  // namespace

Tensor select_finite(const Tensor& mask, const Tensor& a, const Tensor& b) {
  Tensor m = mask.cast(a.dtype());
  return a * m + b * (1.0 - m);
}

Tensor exp(const Tensor& x) {
  return in_f32(x, "exp", [](const Tensor& f) { return f.mul(c(f, kLog2e)).exp2(); });
}
Tensor log(const Tensor& x) {
  return in_f32(x, "log", [](const Tensor& f) { return f.log2() * kLn2; });
}
Tensor exp2(const Tensor& x) { return float_input(x, "exp2").exp2(); }
Tensor log2(const Tensor& x) { return float_input(x, "log2").log2(); }
Tensor log10(const Tensor& x) {
  return in_f32(x, "log10", [](const Tensor& f) { return f.log2() * kLog10of2; });
}
Tensor sqrt(const Tensor& x) { return float_input(x, "sqrt").sqrt(); }
Tensor rsqrt(const Tensor& x) {
  return in_f32(x, "rsqrt", [](const Tensor& f) { return f.sqrt().recip(); });
}
Tensor reciprocal(const Tensor& x) { return float_input(x, "reciprocal").recip(); }
Tensor sin(const Tensor& x) { return float_input(x, "sin").sin(); }

// cos(x) = 1 - 2 sin²(x/2): x/2 is exact, so large arguments stay accurate.
Tensor cos(const Tensor& x) {
  return in_f32(x, "cos", [](const Tensor& f) {
    Tensor s = (f * 0.5).sin();
    return 1.0 - s * s * 2.0;
  });
}

Tensor tan(const Tensor& x) {
  return in_f32(x, "tan", [](const Tensor& f) { return f.sin() / cos(f); });
}

Tensor sigmoid(const Tensor& x) {
  return in_f32(x, "sigmoid", [](const Tensor& f) { return (exp(neg(f)) + 1.0).recip(); });
}

// tanh(x) = 2·sigmoid(2x) - 1: absolute error ~1e-7 near 0, exact saturation.
Tensor tanh(const Tensor& x) {
  return in_f32(x, "tanh", [](const Tensor& f) { return sigmoid(f * 2.0) * 2.0 - 1.0; });
}

// erf: a Taylor series for |x| < 0.5 and 1 - erfc beyond; absolute error < 2e-7.
Tensor erf(const Tensor& x) {
  return in_f32(x, "erf", [&](const Tensor& f) {
    Tensor small = clamp(f, -0.5, 0.5);
    Tensor s2 = small * small;
    Tensor series = small * polynomial(s2, {1.0, -1.0 / 3, 1.0 / 10, -1.0 / 42, 1.0 / 216, -1.0 / 1320}) * kTwoOverSqrtPi;
    Tensor large = sign(f) * (1.0 - erfc_nonneg(abs(f)));
    return select_finite(lt(abs(f), c(f, 0.5)), series, large);
  });
}

Tensor relu(const Tensor& x) { return maximum(x, c(x, 0)); }

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return in_f32(x, "leaky_relu", [&](const Tensor& f) {
    return maximum(f, c(f, 0)) + minimum(f, c(f, 0)) * negative_slope;
  });
}

Tensor gelu(const Tensor& x, bool tanh_approximation) {
  return in_f32(x, "gelu", [&](const Tensor& f) {
    if (tanh_approximation) {
      constexpr double kSqrt2OverPi = 0.7978845608028654;
      Tensor inner = (f + f * f * f * 0.044715) * kSqrt2OverPi;
      return f * 0.5 * (tanh(inner) + 1.0);
    }
    return gelu_erf(f);
  });
}

Tensor silu(const Tensor& x) {
  return in_f32(x, "silu", [&](const Tensor& f) {
    return f * sigmoid(f);
  });
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  return in_f32(x, "softplus", [&](const Tensor& f) {
    Tensor scaled = f * beta;
    Tensor linear_branch = gt(scaled, c(f, threshold));
    // Each branch is kept finite where it is not selected, so blending is exact.
    Tensor soft = log(exp(minimum(scaled, c(f, threshold))) + 1.0) * (1.0 / beta);
    Tensor linear = maximum(f, c(f, threshold / beta - 1.0));
    return select_finite(linear_branch, linear, soft);
  });
}

Tensor mish(const Tensor& x) {
  return in_f32(x, "mish", [&](const Tensor& f) {
    return f * tanh(softplus(f));
  });
}

Tensor trunc(const Tensor& x) {
  if (!is_float(x.dtype())) return x;
  double bound = integral_bound(x.dtype());
  Tensor bounded = clamp(x, -bound, bound);  // inf stays finite here; NaN stays NaN
  return x - bounded.mod(c(x, 1.0));
}

Tensor floor(const Tensor& x) {
  if (!is_float(x.dtype())) return x;
  Tensor t = trunc(x);
  return t - x.less_than(t).cast(x.dtype());
}

Tensor ceil(const Tensor& x) {
  if (!is_float(x.dtype())) return x;
  Tensor t = trunc(x);
  return t + t.less_than(x).cast(x.dtype());
}

Tensor round(const Tensor& x) {
  if (!is_float(x.dtype())) return x;
  Tensor f = floor(x);
  double bound = integral_bound(x.dtype());
  Tensor frac = clamp(x, -bound, bound) - clamp(f, -bound, bound);
  Tensor up = gt(frac, c(x, 0.5)).cast(x.dtype());
  Tensor tie_to_even = logical_and(eq(frac, c(x, 0.5)), ne(f.mod(c(x, 2.0)), c(x, 0))).cast(x.dtype());
  return f + up + tie_to_even;
}

}  // namespace lumen::ops
