// EdgeReader — where an operand element lives in its producer's buffer, for
// concrete indices: a strided fast path for single-layer unmasked views and
// compiled index/validity expressions for everything else.
#pragma once

#include <cstdint>
#include <vector>

#include "lumen/core/expr_eval.h"
#include "lumen/core/view.h"

namespace lumen::interp {

class EdgeReader {
 public:
  EdgeReader(const View& view, const Bindings& bindings);

  // Flat source position of the element at `idx` (one value per dim), or -1
  // where the view reads padding.
  int64_t source(const int64_t* idx) const;

 private:
  bool strided_ = false;
  int64_t offset_ = 0;
  std::vector<int64_t> strides_;
  ExprProgram index_, valid_;
};

}  // namespace lumen::interp
