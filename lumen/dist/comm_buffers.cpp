#include "lumen/dist/comm_buffers.h"

#include <cstring>

#include "lumen/core/error.h"

namespace lumen::dist {

namespace {

// Elements before the axis (outer blocks) and from the axis inward (one block).
std::pair<int64_t, int64_t> blocks(const std::vector<int64_t>& shape, int axis) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < shape.size(); ++d) (static_cast<int>(d) < axis ? outer : inner) *= shape[d];
  return {outer, inner};
}

}  // namespace

Array chunk_of(const Array& whole, int axis, int parts, int index, const std::string& what) {
  const std::vector<int64_t>& shape = whole.shape();
  if (axis < 0 || static_cast<size_t>(axis) >= shape.size() || shape[static_cast<size_t>(axis)] % parts != 0) {
    fail("dist: '", what, "' has shape ", shape_string(shape), "; it must split along axis ", axis, " into ", parts,
         " equal parts");
  }
  std::vector<int64_t> chunk = shape;
  chunk[static_cast<size_t>(axis)] /= parts;
  Array out(whole.dtype(), chunk);
  auto [outer, inner] = blocks(chunk, axis);
  size_t bytes = static_cast<size_t>(inner) * dtype_size(whole.dtype());
  const auto* src = static_cast<const char*>(whole.data());
  auto* dst = static_cast<char*>(out.data());
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(dst + static_cast<size_t>(o) * bytes, src + static_cast<size_t>(o * parts + index) * bytes, bytes);
  }
  return out;
}

Array assemble_chunks(const Array& gathered, const std::vector<int64_t>& chunk, int axis, int parts) {
  std::vector<int64_t> shape = chunk;
  shape[static_cast<size_t>(axis)] *= parts;
  Array out(gathered.dtype(), shape);
  auto [outer, inner] = blocks(chunk, axis);
  size_t bytes = static_cast<size_t>(inner) * dtype_size(gathered.dtype());
  const auto* src = static_cast<const char*>(gathered.data());
  auto* dst = static_cast<char*>(out.data());
  for (int r = 0; r < parts; ++r) {
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(dst + static_cast<size_t>(o * parts + r) * bytes, src + static_cast<size_t>(r * outer + o) * bytes, bytes);
    }
  }
  return out;
}

std::vector<int64_t> concrete_shape(const Shape& shape, const Bindings& bindings) {
  std::vector<int64_t> out;
  for (const Expr& d : shape) out.push_back(evaluate(d, bindings));
  return out;
}

}  // namespace lumen::dist
