// Integer helpers for index math: floor division/modulo, overflow-checked
// arithmetic (throws lumen::Error), and saturating "bound" arithmetic where
// ±kBoundInf means unbounded.
#pragma once

#include <cstdint>

#include "lumen/core/error.h"
#include "lumen/core/expr.h"

namespace lumen {

__extension__ typedef __int128 int128_t;

inline int64_t floordiv(int64_t a, int64_t b) {
  if (b == 0) fail("integer division by zero");
  if (a == INT64_MIN && b == -1) fail("integer overflow in ", a, " / ", b);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

inline int64_t floormod(int64_t a, int64_t b) {
  if (b == 0) fail("integer modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

inline int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail("integer overflow in ", a, " + ", b);
  return r;
}

inline int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail("integer overflow in ", a, " * ", b);
  return r;
}

inline int64_t bound_clamp(int128_t v) {
  if (v >= kBoundInf) return kBoundInf;
  if (v <= -kBoundInf) return -kBoundInf;
  return static_cast<int64_t>(v);
}

inline bool bound_is_inf(int64_t v) { return v >= kBoundInf || v <= -kBoundInf; }

// Adds two bounds; an infinite operand dominates (the first infinite one wins).
inline int64_t bound_add(int64_t a, int64_t b) {
  if (bound_is_inf(a)) return a;
  if (bound_is_inf(b)) return b;
  return bound_clamp(static_cast<int128_t>(a) + b);
}

inline int64_t bound_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (bound_is_inf(a) || bound_is_inf(b)) return ((a < 0) != (b < 0)) ? -kBoundInf : kBoundInf;
  return bound_clamp(static_cast<int128_t>(a) * b);
}

inline int64_t bound_floordiv(int64_t a, int64_t b) {
  if (bound_is_inf(a)) return ((a < 0) != (b < 0)) ? -kBoundInf : kBoundInf;
  if (bound_is_inf(b)) return (a == 0 || (a > 0) == (b > 0)) ? 0 : -1;
  return floordiv(a, b);
}

inline int64_t bound_neg(int64_t a) { return bound_clamp(-static_cast<int128_t>(a)); }
inline int64_t bound_abs(int64_t a) { return a < 0 ? bound_neg(a) : a; }

}  // namespace lumen
