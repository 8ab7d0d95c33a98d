#include "lumen/ops/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/math.h"
#include "lumen/ops/movement.h"
#include "lumen/ops/precision.h"

namespace lumen::ops {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor c(const Tensor& like, double v) { return scalar_like(like, v, like.dtype()); }

// Reduces `axes` one at a time, highest first (so lower axis numbers stay
// valid). With `merge_runs`, each run of adjacent axes that is one run in
// memory (a contiguous tensor's, a channels-last image's positions) is first
// merged into one (a free reshape): one reduction over all of its elements,
// whose loop the compiler can vectorize and cut into parallel parts, instead
// of a reduction nested in another. A run that is not (a transposed view's)
// loses its last axis alone first; the result is contiguous, so the rest
// merges. For sums and maxima (the result is the same up to the order of
// additions).
template <typename F>
Tensor reduce_axes(const Tensor& x, const std::vector<int>& axes, bool keepdim, F&& reduce_one, bool merge_runs = false) {
  const std::vector<ViewLayer>& layers = x.view().layers();
  const bool merge = merge_runs && layers.size() == 1 && layers[0].mask.empty();  // one strided layer  // one strided layer
  Tensor r = x;
  for (size_t end = axes.size(); end > 0;) {
    size_t begin = end - 1;
    while (merge && begin > 0 && axes[begin - 1] + 1 == axes[begin]) --begin;
    int first = axes[begin], last = axes[end - 1];
    if (first != last) {
      Shape merged;
      for (int d = 0; d < static_cast<int>(r.rank()); ++d) {
        if (d > first && d <= last) {
          merged.back() = simplify(merged.back() * r.shape()[static_cast<size_t>(d)]);
        } else {
          merged.push_back(r.shape()[static_cast<size_t>(d)]);
        }
      }
      Tensor m = r.reshape(merged);
      if (m.view().layers().size() > r.view().layers().size()) {
        r = reduce_one(r, last);  // not one run in memory: the last axis alone, the others next
        end = end - 1;
        continue;
      }
      r = m;
    }
    r = reduce_one(r, first);
    end = begin;
  }
  if (keepdim) {
    for (int a : axes) r = r.unsqueeze(a);
  }
  return r;
}

// A float tensor holding the value of a (possibly symbolic) count.
Tensor count_tensor(const Tensor& like, const Expr& n, DType dtype) {
  return like.graph()->iota(n, {}, DType::I32).cast(dtype);
}

// x padded along `axis` with `before` and `after` elements of `fill`
// (exactly: padding reads 0, fill is added only there).
Tensor pad_with(const Tensor& x, int axis, int64_t before, int64_t after, double fill) {
  Tensor padded = pad_axis(x, axis, before, after);
  if (fill == 0) return padded;
  Tensor ones = pad_axis(c(x, 1).expand(x.shape()), axis, before, after);  // 1 inside, 0 in the padding
  return padded + (1.0 - ones) * fill;
}

// Pairwise tree product along a static axis: exact rounding per multiply.
Tensor tree_product(const Tensor& x, int axis) {
  int64_t n = x.shape()[static_cast<size_t>(axis)].value();
  if (n == 0) return c(x, 1).expand(x.shape()).sum_reduce(axis) + 1.0;
  Tensor r = x;
  while (n > 1) {
    int64_t half = (n + 1) / 2;
    if (n % 2) r = pad_with(r, axis, 0, 1, 1.0);
    r = r.slice(axis, 0, half).mul(r.slice(axis, half, 2 * half));
    n = half;
  }
  return r.squeeze(axis);
}

// Inclusive prefix sums along a static `axis`, in blocks of kBlock: within a
// block, each position sums the window of kBlock positions ending at it (the
// zeros padded before the block's start read as nothing: exact for inf and
// NaN, unlike a product with a triangular mask); the blocks' totals are
// scanned the same way (recursively) and added to the blocks after them.
// Reads and writes the data about three times, where doubling steps take
// log2(n) passes (cumsum of 2048 rows of 1024, 2 threads: 11.5 -> 2.9 ms).
// Along an axis before the last, the dims after it stay where they are, so
// their rows are the SIMD lanes of every step (down the columns of a 1024 x
// 1024 matrix, 2 threads: 7.0 -> 1.1 ms; the scan of its transpose read every
// element strided).
Tensor blocked_prefix_sum(const Tensor& x, int axis) {
  constexpr int64_t kBlock = 16;
  auto a = static_cast<size_t>(axis);
  int64_t n = x.shape()[a].value();
  if (n <= 2 * kBlock) return pad_axis(x, axis, n - 1, 0).unfold(axis, n, 1).sum_reduce(axis + 1);
  int64_t blocks = (n + kBlock - 1) / kBlock;
  Shape blocked = x.shape();
  blocked[a] = Expr(blocks);
  blocked.insert(blocked.begin() + axis + 1, Expr(kBlock));
  Tensor grid = pad_axis(x, axis, 0, blocks * kBlock - n).reshape(blocked);  // [.., blocks, b, ..]
  // [.., blocks, b, ..]: a pairwise tree of shifted views (four adds deep), not a 16-term reduction loop
  // whose one accumulator chains sixteen dependent adds.
  Tensor padded = pad_axis(grid, axis + 1, kBlock - 1, 0);
  std::vector<Tensor> terms;
  for (int64_t s = 0; s < kBlock; ++s) {
    terms.push_back(padded.slice(axis + 1, Expr(kBlock - 1 - s), Expr(2 * kBlock - 1 - s)));
  }
  while (terms.size() > 1) {
    std::vector<Tensor> next;
    for (size_t i = 0; i < terms.size(); i += 2) next.push_back(i + 1 < terms.size() ? terms[i].add(terms[i + 1]) : terms[i]);
    terms = next;
  }
  Tensor within = terms[0];
  // Each block's total straight from x (a contiguous reduction; the last of `within` would
  // be read a cache line per element), kept: read through the shift and the next level's
  // blocks, its index math would otherwise carry across rows (floordiv and mod per element).
  Tensor totals = grid.sum_reduce(axis + 1).contiguous();  // [.., blocks, ..]
  // The sums of the blocks before each: the totals' inclusive scan, kept, then read one block
  // later (shifting its input instead would carry the shift through the next level's blocks).
  Tensor scanned = blocked_prefix_sum(totals, axis).buffered();
  Tensor before = pad_axis(scanned, axis, 1, 0).slice(axis, 0, blocks);
  Shape flat = x.shape();
  flat[a] = Expr(blocks * kBlock);
  return (within + before.unsqueeze(axis + 1)).reshape(flat).slice(axis, 0, n);
}

// Inclusive scan along `axis`: sums in blocks (blocked_prefix_sum), a
// symbolic length by a lower-triangular mask, products by doubling
// (Hillis-Steele: log2(n) steps, each exact).
Tensor scan(const Tensor& x, int axis, bool multiply) {
  Expr extent = x.shape()[static_cast<size_t>(axis)];
  if (!extent.is_const()) {
    if (multiply) fail("cumprod: needs a static length along axis ", axis, ", got ", extent);
    Shape s{extent, extent};
    Tensor mask = x.graph()->iota(ge(loop_index(s, 0), loop_index(s, 1)), s, DType::Bool).cast(x.dtype());
    Tensor moved = x.transpose(axis, -1).unsqueeze(-2);  // [..., 1, n]
    return (moved * mask).sum_reduce(-1).transpose(axis, -1);
  }
  int64_t n = extent.value();
  if (!multiply) return n > 1 ? blocked_prefix_sum(x, axis) : x;
  Tensor r = x;
  for (int64_t shift = 1; shift < n; shift *= 2) {
    r = r.mul(pad_with(r.slice(axis, 0, n - shift), axis, shift, 0, 1.0));  // shifted in: 1
  }
  return r;
}

Tensor arg_extreme(const Tensor& x, std::optional<int> axis, bool keepdim, bool largest) {
  Tensor t = x;
  int a;
  if (!axis) {
    t = x.reshape({shape_numel(x.shape())});
    a = 0;
    keepdim = false;
  } else {
    a = x.axis(*axis, largest ? "argmax" : "argmin");
  }
  Tensor v = t.dtype() == DType::Bool ? t.cast(DType::I32) : t;
  // The smallest is the largest of -x for floats and of ~x = -x - 1 for
  // integers (exact and order-reversing for every value, INT_MIN included).
  if (!largest) v = is_float(v.dtype()) ? neg(v) : neg(v).add(scalar_like(v, -1, v.dtype()));
  Tensor m = v.max_reduce(a).unsqueeze(a);
  Tensor hit = logical_or(eq(v, m), isnan(v));
  Expr n = t.shape()[static_cast<size_t>(a)];
  Shape s(t.rank(), Expr(1));
  s[static_cast<size_t>(a)] = n;
  Tensor iota = t.graph()->iota(n - loop_index(s, static_cast<size_t>(a)), s, DType::I32);  // n, n-1, ..., 1
  Tensor first = hit.cast(DType::I32).mul(iota).max_reduce(a);  // largest weight = first hit
  Tensor index = t.graph()->iota(n, {}, DType::I32).add(neg(first)).cast(DType::I64);  // i64, as PyTorch
  return keepdim ? index.unsqueeze(a) : index;
}

}  // namespace

std::vector<int> normalize_axes(const Tensor& x, const Axes& axes, const char* op) {
  std::vector<int> out;
  if (axes.empty()) {
    for (size_t d = 0; d < x.rank(); ++d) out.push_back(static_cast<int>(d));
    return out;
  }
  for (int a : axes) {
    int n = x.axis(a, op);
    if (std::find(out.begin(), out.end(), n) != out.end()) fail(op, ": axis ", a, " is given twice");
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Expr axes_numel(const Tensor& x, const std::vector<int>& axes) {
  Expr n = Expr(1);
  for (int a : axes) n = n * x.shape()[static_cast<size_t>(a)];
  return simplify(n);
}

Tensor sum(const Tensor& x, const Axes& axes, bool keepdim) {
  Tensor t = x.dtype() == DType::Bool ? x.cast(DType::I32) : x;
  return reduce_axes(t, normalize_axes(x, axes, "sum"), keepdim, [](const Tensor& r, int a) { return r.sum_reduce(a); }, true);
}

Tensor mean(const Tensor& x, const Axes& axes, bool keepdim) {
  if (!is_float(x.dtype())) fail("mean: needs a float tensor, got ", dtype_name(x.dtype()), " (cast first)");
  std::vector<int> ax = normalize_axes(x, axes, "mean");
  // Divided before the kept dims come back: the division, fused with the sum, then has the kept
  // dims as its last ones (a global average pool's channels in SIMD lanes, not a trailing 1 x 1).
  return compute_in_f32(x, [&](const Tensor& f) {
    Tensor m = sum(f, axes, false) / count_tensor(f, axes_numel(f, ax), f.dtype());
    if (keepdim) {
      for (int a : ax) m = m.unsqueeze(a);
    }
    return m;
  });
}

Tensor amax(const Tensor& x, const Axes& axes, bool keepdim) {
  return reduce_axes(x, normalize_axes(x, axes, "amax"), keepdim, [](const Tensor& r, int a) { return r.max_reduce(a); }, true);
}

Tensor amin(const Tensor& x, const Axes& axes, bool keepdim) {
  if (x.dtype() == DType::Bool) return logical_not(amax(logical_not(x), axes, keepdim));
  if (x.dtype() == DType::I32 || x.dtype() == DType::I64) {  // min = ~max(~x) with ~v = -v - 1; wraps, so exact at INT_MIN
    Tensor complement = neg(x).add(c(x, -1));
    return neg(amax(complement, axes, keepdim)).add(c(x, -1));
  }
  return neg(amax(neg(x), axes, keepdim));
}

Tensor prod(const Tensor& x, const Axes& axes, bool keepdim) {
  Tensor t = x.dtype() == DType::Bool ? x.cast(DType::I32) : x;
  return reduce_axes(t, normalize_axes(x, axes, "prod"), keepdim, [](const Tensor& r, int a) {
    if (r.shape()[static_cast<size_t>(a)].is_const()) return tree_product(r, a);
    if (!is_float(r.dtype())) fail("prod: integer products need a static length, got ", r.shape()[static_cast<size_t>(a)]);
    // Symbolic length: magnitude through logs, sign by counting negatives.
    Tensor negatives = lt(r, c(r, 0)).cast(DType::I32).sum_reduce(a);
    Tensor odd = negatives.mod(scalar_like(negatives, 2, DType::I32)).cast(r.dtype());
    return abs(r).log2().sum_reduce(a).exp2() * (1.0 - odd * 2.0);
  });
}

Tensor var(const Tensor& x, const Axes& axes, double correction, bool keepdim) {
  if (!is_float(x.dtype())) fail("var: needs a float tensor, got ", dtype_name(x.dtype()));
  std::vector<int> ax = normalize_axes(x, axes, "var");
  return compute_in_f32(x, [&](const Tensor& f) {
    Tensor centred = f - mean(f, axes, true);
    Tensor n = count_tensor(f, axes_numel(f, ax), f.dtype());
    // As PyTorch: the divisor is max(0, n - correction), so a slice with too
    // few elements (an empty one included) gives NaN (0/0) or inf, never -0.
    return sum(centred * centred, axes, keepdim) / maximum(n - correction, c(n, 0));
  });
}

Tensor std(const Tensor& x, const Axes& axes, double correction, bool keepdim) {
  return var(x, axes, correction, keepdim).sqrt();
}

Tensor logsumexp(const Tensor& x, const Axes& axes, bool keepdim) {
  if (x.dtype() == DType::F16 || x.dtype() == DType::BF16) {
    return logsumexp(x.cast(DType::F32), axes, keepdim).cast(x.dtype());
  }
  Tensor f = is_float(x.dtype()) ? x : x.cast(DType::F32);
  std::vector<int> ax = normalize_axes(f, axes, "logsumexp");
  Tensor m = amax(f, ax, true);
  // An all -inf (or +inf) slice must not produce inf - inf.
  Tensor safe = where(isinf(m), c(m, 0), m);
  Tensor s = log(sum(exp(f - safe), ax, true)) + safe;
  if (!keepdim) {
    for (auto it = ax.rbegin(); it != ax.rend(); ++it) s = s.squeeze(*it);
  }
  return s;
}

Tensor all(const Tensor& x, const Axes& axes, bool keepdim) {
  Tensor b = x.dtype() == DType::Bool ? x : ne(x, c(x, 0));
  return logical_not(amax(logical_not(b), axes, keepdim));
}

Tensor any(const Tensor& x, const Axes& axes, bool keepdim) {
  Tensor b = x.dtype() == DType::Bool ? x : ne(x, c(x, 0));
  return amax(b, axes, keepdim);
}

Tensor argmax(const Tensor& x, std::optional<int> axis, bool keepdim) { return arg_extreme(x, axis, keepdim, true); }

Tensor argmin(const Tensor& x, std::optional<int> axis, bool keepdim) { return arg_extreme(x, axis, keepdim, false); }

Tensor cumsum(const Tensor& x, int axis) {
  Tensor t = x.dtype() == DType::Bool ? x.cast(DType::I32) : x;
  return scan(t, x.axis(axis, "cumsum"), false);
}

Tensor cumprod(const Tensor& x, int axis) {
  Tensor t = x.dtype() == DType::Bool ? x.cast(DType::I32) : x;
  return scan(t, x.axis(axis, "cumprod"), true);
}

Tensor softmax(const Tensor& x, int axis) {
  Tensor f = is_float(x.dtype()) ? x : x.cast(DType::F32);
  int a = f.axis(axis, "softmax");
  return compute_in_f32(f, [&](const Tensor& v) {
    Tensor e = exp(v - v.max_reduce(a).unsqueeze(a));
    return e / e.sum_reduce(a).unsqueeze(a);
  });
}

Tensor log_softmax(const Tensor& x, int axis) {
  Tensor f = is_float(x.dtype()) ? x : x.cast(DType::F32);
  int a = f.axis(axis, "log_softmax");
  return compute_in_f32(f, [&](const Tensor& v) {
    Tensor shifted = v - v.max_reduce(a).unsqueeze(a);
    return shifted - log(exp(shifted).sum_reduce(a).unsqueeze(a));
  });
}

}  // namespace lumen::ops
