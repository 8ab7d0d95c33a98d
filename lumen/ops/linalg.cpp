#include "lumen/ops/linalg.h"

#include <algorithm>
#include <map>
#include <optional>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/ops/elementwise.h"

namespace lumen::ops {

Tensor matmul(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  if (x.rank() == 0 || y.rank() == 0) fail("matmul: both operands need at least 1 dim, got ", to_string(a.shape()), " and ", to_string(b.shape()));
  return x.matmul(y);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  if (a.rank() != 3 || b.rank() != 3) {
    fail("bmm: expects 3-D operands [B, M, K] and [B, K, N], got ", to_string(a.shape()), " and ", to_string(b.shape()));
  }
  if (simplify(a.shape()[0]) != simplify(b.shape()[0])) {
    fail("bmm: batch sizes differ: ", to_string(a.shape()), " and ", to_string(b.shape()));
  }
  return matmul(a, b);
}

Tensor linear(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias) {
  if (weight.rank() != 2) fail("linear: weight must be 2-D [out, in], got ", to_string(weight.shape()));
  Tensor y = matmul(x, weight.transpose(0, 1));
  return bias ? add(y, *bias) : y;
}

Tensor outer(const Tensor& a, const Tensor& b) {
  if (a.rank() != 1 || b.rank() != 1) fail("outer: expects 1-D operands, got ", to_string(a.shape()), " and ", to_string(b.shape()));
  return mul(a.unsqueeze(1), b.unsqueeze(0));
}

namespace {

// Expands "..." into fresh labels (uppercase, which users may not write) for an operand of `rank`.
std::string expand_ellipsis(const std::string& spec, size_t rank, size_t* ellipsis_rank, const std::string& equation) {
  auto at = spec.find("...");
  if (at == std::string::npos) return spec;
  size_t explicit_labels = spec.size() - 3;
  if (rank < explicit_labels) fail("einsum: operand of rank ", rank, " is too small for '", spec, "' in '", equation, "'");
  size_t n = rank - explicit_labels;
  *ellipsis_rank = std::max(*ellipsis_rank, n);
  std::string labels;
  for (size_t i = 0; i < n; ++i) labels += static_cast<char>('Z' - (n - 1 - i));
  return spec.substr(0, at) + labels + spec.substr(at + 3);
}

// Takes the diagonal for labels repeated within one operand ("ii" -> "i").
Tensor take_diagonals(Tensor t, std::string& labels) {
  for (size_t i = 0; i < labels.size(); ++i) {
    for (size_t j = i + 1; j < labels.size(); ++j) {
      if (labels[i] != labels[j]) continue;
      Expr n = t.shape()[i];
      if (simplify(n) != simplify(t.shape()[j])) fail("einsum: repeated label '", labels[i], "' has different sizes");
      if (!n.is_const()) fail("einsum: a repeated label needs a static size, got ", n);
      // Move dims i and j last, flatten them and step by n + 1 along the diagonal.
      std::vector<int> order;
      std::string rest;
      for (size_t d = 0; d < labels.size(); ++d) {
        if (d == i || d == j) continue;
        order.push_back(static_cast<int>(d));
        rest += labels[d];
      }
      order.push_back(static_cast<int>(i));
      order.push_back(static_cast<int>(j));
      t = t.permute(order);
      Shape s(t.shape().begin(), t.shape().end() - 2);
      s.push_back(Expr(n.value() * n.value()));
      int last = static_cast<int>(s.size()) - 1;
      t = t.reshape(s).slice(last, 0, n.value() * n.value(), n.value() + 1);
      labels = rest + labels[i];
      return take_diagonals(t, labels);
    }
  }
  return t;
}

Expr product_of(const std::string& labels, const std::map<char, Expr>& sizes) {
  Expr n = Expr(1);
  for (char ch : labels) n = n * sizes.at(ch);
  return simplify(n);
}

// Two operands with summed labels as one batched matrix product, the form the
// built-in matmul takes: A [batch, m, k] x B [batch, k, n], each group of
// labels flattened to one dim, then back to the output's labels. (The general
// form below multiplies every label's point and sums after: a [512, 64, 64] x
// [64, 64, 512] tensordot took 340 ms that way.) Labels of one operand only
// and not in the output are summed first. Empty when a shared label is
// broadcast (size 1 in one operand) or nothing is summed.
std::optional<Tensor> contract_pair(std::vector<Tensor> ts, std::vector<std::string> specs, const std::string& out,
                                    const std::map<char, Expr>& sizes) {
  for (size_t k = 0; k < 2; ++k) {
    const std::string& other = specs[1 - k];
    for (size_t d = specs[k].size(); d-- > 0;) {
      char ch = specs[k][d];
      if (out.find(ch) != std::string::npos || other.find(ch) != std::string::npos) continue;
      ts[k] = ts[k].sum_reduce(static_cast<int>(d));
      specs[k].erase(d, 1);
    }
  }
  std::string batch, m, n, summed;
  for (char ch : specs[0]) {
    bool in_b = specs[1].find(ch) != std::string::npos, in_out = out.find(ch) != std::string::npos;
    (in_b ? (in_out ? batch : summed) : m) += ch;
  }
  for (char ch : specs[1]) {
    if (specs[0].find(ch) == std::string::npos) n += ch;
  }
  if (summed.empty()) return std::nullopt;
  for (char ch : batch + summed) {
    Expr a = ts[0].shape()[specs[0].find(ch)], b = ts[1].shape()[specs[1].find(ch)];
    if (!(simplify(a) == simplify(b))) return std::nullopt;
  }
  auto arranged = [&](size_t k, const std::string& order, const Shape& as) {
    std::vector<int> perm;
    for (char ch : order) perm.push_back(static_cast<int>(specs[k].find(ch)));
    return ts[k].permute(perm).reshape(as);
  };
  Tensor a = arranged(0, batch + m + summed, {product_of(batch, sizes), product_of(m, sizes), product_of(summed, sizes)});
  Tensor b = arranged(1, batch + summed + n, {product_of(batch, sizes), product_of(summed, sizes), product_of(n, sizes)});
  auto [x, y] = promote(a, b);
  Shape grouped;
  std::string labels = batch + m + n;
  for (char ch : labels) grouped.push_back(sizes.at(ch));
  Tensor c = x.matmul(y).reshape(grouped);
  std::vector<int> perm;
  for (char ch : out) perm.push_back(static_cast<int>(labels.find(ch)));
  return c.permute(perm);
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  std::string eq;
  for (char ch : equation) {
    if (ch != ' ') eq += ch;
  }
  auto arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> specs;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    specs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (specs.size() != operands.size()) {
    fail("einsum: '", equation, "' names ", specs.size(), " operands but ", operands.size(), " were given");
  }
  size_t ellipsis_rank = 0;
  std::vector<Tensor> ts = operands;
  std::map<char, Expr> sizes;
  std::map<char, int> counts;
  std::string order;  // every label, in first-seen order
  for (size_t k = 0; k < specs.size(); ++k) {
    for (char ch : specs[k]) {
      if (ch != '.' && !std::islower(static_cast<unsigned char>(ch))) {
        fail("einsum: labels must be lowercase letters, got '", ch, "' in '", equation, "'");
      }
    }
    specs[k] = expand_ellipsis(specs[k], ts[k].rank(), &ellipsis_rank, equation);
    if (specs[k].size() != ts[k].rank()) {
      fail("einsum: operand ", k, " has shape ", to_string(ts[k].shape()), " but '", specs[k], "' names ",
           specs[k].size(), " dims");
    }
    for (char ch : specs[k]) counts[ch]++;  // before diagonals: "ii" uses i twice
    ts[k] = take_diagonals(ts[k], specs[k]);
    for (size_t d = 0; d < specs[k].size(); ++d) {
      char ch = specs[k][d];
      Expr n = ts[k].shape()[d];
      auto it = sizes.find(ch);
      if (it == sizes.end()) {
        sizes[ch] = n;
        order += ch;
      } else if (simplify(it->second) != simplify(n) && !n.is_const(1)) {
        if (it->second.is_const(1)) {
          it->second = n;
        } else {
          fail("einsum: label '", ch, "' has size ", it->second, " in one operand and ", n, " in another");
        }
      }
    }
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
    auto at = out.find("...");
    if (at != std::string::npos) {
      std::string labels;
      for (size_t i = 0; i < ellipsis_rank; ++i) labels += static_cast<char>('Z' - (ellipsis_rank - 1 - i));
      out = out.substr(0, at) + labels + out.substr(at + 3);
    }
    for (char ch : out) {
      if (!sizes.count(ch)) fail("einsum: output label '", ch, "' does not appear in the inputs of '", equation, "'");
    }
  } else {
    for (size_t i = 0; i < ellipsis_rank; ++i) out += static_cast<char>('Z' - (ellipsis_rank - 1 - i));
    std::string once;
    for (const auto& [ch, n] : counts) {
      if (n == 1 && std::islower(static_cast<unsigned char>(ch))) once += ch;
    }
    out += once;
  }
  if (ts.size() == 2) {
    if (std::optional<Tensor> c = contract_pair(ts, specs, out, sizes)) return *c;
  }
  // All labels: output labels first, then the summed ones.
  std::string all = out;
  for (char ch : order) {
    if (all.find(ch) == std::string::npos) all += ch;
  }
  Tensor product;
  for (size_t k = 0; k < ts.size(); ++k) {
    std::vector<int> perm;
    Shape target;
    for (char ch : all) {
      auto at = specs[k].find(ch);
      if (at != std::string::npos) perm.push_back(static_cast<int>(at));
    }
    Tensor t = ts[k].permute(perm);
    for (char ch : all) target.push_back(specs[k].find(ch) != std::string::npos ? ts[k].shape()[specs[k].find(ch)] : Expr(1));
    t = t.reshape(target);
    product = product.defined() ? mul(product, t) : t;
  }
  Shape full;
  for (char ch : all) full.push_back(sizes[ch]);
  product = product.expand(full);
  for (size_t d = all.size(); d-- > out.size();) product = product.sum_reduce(static_cast<int>(d));
  return product;
}

}  // namespace lumen::ops
