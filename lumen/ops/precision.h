// Internal to lumen/ops: computing reduced-precision (f16/bf16) ops in f32.
#pragma once

#include "lumen/core/tensor.h"

namespace lumen::ops {

// f(x) computed in f32 for f16/bf16 x and rounded once at the end, as
// PyTorch does for reduced-precision math and reductions.
template <typename F>
Tensor compute_in_f32(const Tensor& x, F&& f) {
  if (x.dtype() != DType::F16 && x.dtype() != DType::BF16) return f(x);
  return f(x.cast(DType::F32)).cast(x.dtype());
}

}  // namespace lumen::ops
