// An operand of a contraction read from packed panels (schedule action
// `pack`): the panel layout and the maps between a product point and its
// panel coordinates. Lowering fills and reads panels through these.
#pragma once

#include <vector>

#include "lumen/core/simplify.h"
#include "lumen/core/view.h"

namespace lumen::kernel {

// An operand of a contraction read from packed panels instead of its producer.
struct Packed {
  int scratch;
  Shape shape;               // [kept dims..., N/nr, K, nr]
  std::vector<size_t> kept;  // product dims the operand depends on (besides n and k)
  size_t n_dim, k_dim;
  int64_t nr;
  bool made_inline = false;  // made inside the kernel, panel by panel (pack_inline)
  bool rows_outer = false;   // the operand is contiguous along n: copy it row by row (k outer)
  bool k_inner = false;      // ... along k (a transposed B): copy vectors along k, lanes outside
  bool pairs = false;        // pair_dot: bf16 k-pairs interleaved, shape [kept dims..., N/nr, K/2, nr, 2]
  int64_t n_extent = 0;      // a static N that nr does not divide: ceil(N/nr) panels, zeros past N; else 0
  size_t rank = 0;           // the product's rank
};

// The panel coordinates [kept..., n / nr, k, n % nr] of a product point
// ([kept..., n / nr, k / 2, n % nr, k % 2] for pairs).
inline std::vector<Expr> panel_of(const Packed& pk, const std::vector<Expr>& at) {
  std::vector<Expr> panel;
  for (size_t d : pk.kept) panel.push_back(at[d]);
  panel.push_back(simplify(at[pk.n_dim] / pk.nr));
  panel.push_back(pk.pairs ? simplify(at[pk.k_dim] / 2) : at[pk.k_dim]);
  panel.push_back(simplify(at[pk.n_dim] % pk.nr));
  if (pk.pairs) panel.push_back(simplify(at[pk.k_dim] % 2));
  return panel;
}

// The product point of panel coordinates (dims the operand ignores at 0).
inline std::vector<Expr> product_of(const Packed& pk, const std::vector<Expr>& panel) {
  std::vector<Expr> at(pk.rank, Expr(0));
  size_t base = pk.kept.size();
  for (size_t i = 0; i < base; ++i) at[pk.kept[i]] = panel[i];
  at[pk.n_dim] = simplify(panel[base] * pk.nr + panel[base + 2]);
  at[pk.k_dim] = pk.pairs ? simplify(panel[base + 1] * 2 + panel[base + 3]) : panel[base + 1];
  return at;
}

}  // namespace lumen::kernel
