// What the names of a Def mean during one call: the sizes bound from the
// arguments' shapes, the scalar arguments, and the tensors (inputs and those
// defined by earlier statements).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "lumen/core/tensor.h"

namespace lumen::tc {

struct FloatScalar {
  double value = 0;
  DType dtype = DType::F32;
};

struct Scope {
  std::string_view source;
  Graph* graph = nullptr;
  std::map<std::string, int64_t> ints;        // sizes and int scalars: compile-time integers
  std::map<std::string, FloatScalar> floats;  // float scalars
  std::map<std::string, Tensor> tensors;
  std::map<std::string, Shape> declared;      // typed outputs' shapes: they bound their statements' indices

  bool is_constant(const std::string& name) const { return ints.count(name) || floats.count(name); }
  bool is_name(const std::string& name) const { return is_constant(name) || tensors.count(name); }
};

// A half-open range [lo, hi) of an index variable.
struct Range {
  int64_t lo = 0;
  int64_t hi = 0;
};

}  // namespace lumen::tc
