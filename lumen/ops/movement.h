// Shape and layout ops with PyTorch semantics (negative dims, clamped
// slices). Everything here is a view except where noted; views cost nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lumen/core/tensor.h"

namespace lumen::ops {

Tensor reshape(const Tensor& x, const Shape& shape);  // one dim may be -1
Tensor permute(const Tensor& x, const std::vector<int>& dims);
Tensor transpose(const Tensor& x, int a, int b);
Tensor expand(const Tensor& x, const Shape& shape);  // -1 keeps a dim
Tensor broadcast_to(const Tensor& x, const Shape& shape);
Tensor squeeze(const Tensor& x, const std::vector<int>& dims = {});  // all size-1 dims when empty
Tensor unsqueeze(const Tensor& x, int dim);
Tensor flatten(const Tensor& x, int start = 0, int end = -1);
// Python slicing of one dim: negative indices count from the end, out-of-range clamps.
Tensor slice(const Tensor& x, int dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step = 1);
Tensor narrow(const Tensor& x, int dim, int64_t start, int64_t length);
Tensor flip(const Tensor& x, const std::vector<int>& dims);
// torch.nn.functional.pad: `pads` lists (before, after) from the last dim
// backwards; mode "constant", "reflect" or "replicate".
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode = "constant", double value = 0);
// x with `before` and `after` zeros padded along one `axis` (negative counts from the end).
Tensor pad_axis(const Tensor& x, int axis, int64_t before, int64_t after);
Tensor concat(const std::vector<Tensor>& tensors, int dim = 0);  // a sum of padded views: one pass
Tensor stack(const std::vector<Tensor>& tensors, int dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int dim = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int dim = 0);
Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats);
Tensor tile(const Tensor& x, const std::vector<int64_t>& repeats);
// torch.roll; with no dims the flattened tensor is rolled.
Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int>& dims = {});

}  // namespace lumen::ops
