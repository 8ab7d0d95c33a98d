// Op — the closed set of primitive operations (ARCHITECTURE.md §3). Every
// model lowers to these; adding one is a design change.
#pragma once

#include <cstdint>

namespace lumen {

enum class Op : uint8_t {
  // sources
  Input,     // named tensor supplied at run time
  Constant,  // a number, or an integer Expr of the element index (iota, masks)
  Cast,      // dtype conversion
  // unary (float dtypes only)
  Log2,
  Exp2,
  Sin,
  Sqrt,
  Recip,
  // binary (equal shapes and dtypes)
  Add,
  Mul,
  Mod,       // truncated remainder, like C fmod / %
  LessThan,  // yields bool
  // reduce one axis (the axis is removed from the shape)
  SumReduce,
  MaxReduce,
  // data-dependent read
  Gather,  // data[..., indices[...], ...] along one axis
  // materialise a view
  Contiguous,
};

const char* op_name(Op op);
bool is_unary(Op op);
bool is_binary(Op op);
bool is_reduce(Op op);
bool is_elementwise(Op op);  // unary, binary or Cast

}  // namespace lumen
