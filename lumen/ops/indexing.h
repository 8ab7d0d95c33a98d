// Data-dependent reads, all built on the Gather primitive.
#pragma once

#include "lumen/core/tensor.h"

namespace lumen::ops {

// torch.gather: out[i..., j, k...] = x[i..., index[i..., j, k...], k...] along `dim`.
Tensor gather(const Tensor& x, int dim, const Tensor& index);
// torch.take_along_dim: gather after broadcasting x and indices (except along dim).
Tensor take_along_dim(const Tensor& x, const Tensor& indices, int dim);
// torch.index_select: a 1-D index picks whole slices along `dim`.
Tensor index_select(const Tensor& x, int dim, const Tensor& index);
// Rows of `weight` [num, dim] for each index: shape indices.shape + [dim].
Tensor embedding(const Tensor& indices, const Tensor& weight);
// i32 one-hot of integer indices: shape indices.shape + [num_classes].
Tensor one_hot(const Tensor& indices, int64_t num_classes);

}  // namespace lumen::ops
