#include "lumen/core/simplify.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "lumen/core/error.h"
#include "lumen/core/int_math.h"
#include "lumen/core/linear_form.h"
#include "lumen/core/simplify_rules.h"

namespace lumen {

namespace {

constexpr int kMaxDepth = 48;
constexpr int kMaxRounds = 8;

// The largest value of a linear form, kept symbolic where a variable's bound
// is a dynamic dim: a loop index over [0, seq) contributes at most seq - 1,
// and a product of non-negative factors such as i·seq (i over [0, batch))
// at most (batch - 1)·seq. Nothing when a term is unbounded above.
std::optional<LinearForm> symbolic_max(const LinearForm& form) {
  auto has_extent = [](const Expr& f) { return f.kind() == ExprKind::Var && f.a().defined() && f.lo() >= 0; };
  // A factor with a modest numeric bound (a loop index over a static extent,
  // not a dynamic dim) is at most that bound.
  auto small = [](const Expr& f) { return f.kind() == ExprKind::Var && !f.a().defined() && f.lo() >= 0 && f.hi() < (int64_t{1} << 31); };
  LinearForm out;
  out.constant = form.constant;
  try {
    for (const auto& [term, c] : form.terms) {
      std::vector<Expr> factors = product_factors(term);
      // min(x, b) is at most b: a coordinate clamped to a dynamic row's last
      // point, min(i * 16 + lane, past), is below past + 1.
      if (c > 0 && factors.size() == 1 && term.kind() == ExprKind::Min) {
        auto index_free = [&](const Expr& arm) {
          auto vars = expr_vars(arm);
          return std::none_of(vars.begin(), vars.end(), [&](const Expr& v) { return has_extent(v) || small(v); });
        };
        Expr bound = index_free(term.b()) ? term.b() : index_free(term.a()) ? term.a() : Expr();
        auto bound_form = bound.defined() ? LinearForm::of(bound) : std::nullopt;
        if (bound_form) {
          out.add(*bound_form, c);
          continue;
        }
      }
      bool non_negative = std::all_of(factors.begin(), factors.end(), [](const Expr& f) { return f.lo() >= 0; });
      bool bounded = std::any_of(factors.begin(), factors.end(), has_extent) ||
                     (factors.size() > 1 && std::any_of(factors.begin(), factors.end(), small));
      if (!non_negative || !bounded) {
        out.add(term, c);  // stays symbolic, so it can cancel against an extent
      } else if (c > 0) {   // each index at its largest value: extent - 1
        Expr top = Expr(1);
        for (const Expr& f : factors) {
          top = make_mul(top, has_extent(f) ? make_add(f.a(), Expr(-1)) : small(f) ? Expr(f.hi()) : f);
        }
        out.add(top, c);
      } else {  // a non-negative product is at least the product of the lower bounds
        int64_t low = 1;
        for (const Expr& f : factors) low = checked_mul(low, f.lo());
        out.constant = checked_add(out.constant, checked_mul(low, c));
      }
    }
  } catch (const Error&) {
    return std::nullopt;
  }
  return out;
}

bool excludes_zero(const Expr& e) { return e.lo() > 0 || e.hi() < 0; }

// Splits a monomial into its constant coefficient and sorted factors.
std::pair<int64_t, std::vector<Expr>> monomial(const Expr& term, int64_t coefficient) {
  std::vector<Expr> factors = product_factors(term);
  return {coefficient, factors};
}

// term·coefficient divided by divisor (a monomial), if it divides exactly.
std::optional<std::pair<Expr, int64_t>> divide_monomial(const Expr& term, int64_t coefficient,
                                                       const std::pair<int64_t, std::vector<Expr>>& divisor) {
  if (divisor.first == 0 || coefficient % divisor.first != 0) return std::nullopt;
  std::vector<Expr> factors = product_factors(term);
  for (const Expr& d : divisor.second) {
    auto it = std::find(factors.begin(), factors.end(), d);
    if (it == factors.end()) return std::nullopt;
    factors.erase(it);
  }
  return std::make_pair(make_product(factors), coefficient / divisor.first);
}

// Polynomial division of x by d: takes multiples q·d out of x while every
// term of q·d appears in what is left. Returns (quotient, remainder).
std::pair<LinearForm, LinearForm> divide_polynomial(const LinearForm& x, const LinearForm& d) {
  auto lead = monomial(d.terms[0].first, d.terms[0].second);
  LinearForm quotient, rest = x;
  for (int guard = 0; guard < 64; ++guard) {
    bool progress = false;
    for (const auto& [term, coefficient] : rest.terms) {
      auto q = divide_monomial(term, coefficient, lead);
      if (!q) continue;
      LinearForm multiple;  // q·d
      for (const auto& [dt, dc] : d.terms) multiple.add(make_mul(q->first, dt), checked_mul(q->second, dc));
      if (d.constant != 0) multiple.add(q->first, checked_mul(q->second, d.constant));
      bool present = std::all_of(multiple.terms.begin(), multiple.terms.end(), [&](const auto& m) {
        return std::any_of(rest.terms.begin(), rest.terms.end(), [&](const auto& r) { return r.first == m.first; });
      });
      if (!present) continue;
      rest.add(multiple, -1);
      quotient.add(q->first, q->second);
      progress = true;
      break;
    }
    if (!progress) break;
  }
  return {quotient, rest};
}

// Exprs are immutable and hash-consed, so a simplified form stays valid
// forever: results are remembered per thread (the table holds both nodes
// alive) and forgotten wholesale when the table grows large.
using SimplifiedTable = std::unordered_map<const ExprNode*, std::pair<Expr, Expr>>;

SimplifiedTable& simplified() {
  thread_local SimplifiedTable table;
  return table;
}

void remember(const Expr& e, const Expr& result) {
  SimplifiedTable& t = simplified();
  if (t.size() > (1u << 18)) t.clear();
  t.emplace(e.get(), std::make_pair(e, result));
  t.emplace(result.get(), std::make_pair(result, result));
}

class Simplifier {
 public:
  Expr run(const Expr& e) {
    if (!e.defined() || e.kind() == ExprKind::Const || e.kind() == ExprKind::Var) return e;
    auto it = simplified().find(e.get());
    if (it != simplified().end()) return it->second.second;
    if (depth_ > kMaxDepth) {
      complete_ = false;
      return e;
    }
    ++depth_;
    Expr rebuilt = rebuild(e);
    Expr result = node(rebuilt);
    --depth_;
    if (complete_) remember(e, result);
    return result;
  }

  bool prove(const Expr& cond) {
    if (excludes_zero(cond)) return true;
    switch (cond.kind()) {
      case ExprKind::And: return prove(cond.a()) && prove(cond.b());
      case ExprKind::Or: return prove(cond.a()) || prove(cond.b());
      case ExprKind::Lt: return prove_negative(cond.a() - cond.b());
      case ExprKind::Eq: {
        auto diff = LinearForm::of(cond.a() - cond.b());
        return diff && diff->is_constant() && diff->constant == 0;
      }
      case ExprKind::Not: {
        Expr inner = cond.a();
        if (inner.lo() == 0 && inner.hi() == 0) return true;
        if (inner.kind() == ExprKind::Lt) return prove_negative(inner.b() - inner.a() - 1);
        if (inner.kind() == ExprKind::Eq) return prove(make_lt(inner.a(), inner.b())) || prove(make_lt(inner.b(), inner.a()));
        if (inner.kind() == ExprKind::Not) return prove(inner.a());
        return false;
      }
      default: return false;
    }
  }

 private:
  // True if `e` < 0 everywhere.
  bool prove_negative(const Expr& e) {
    auto form = LinearForm::of(e);
    if (!form) return false;
    Expr canonical = form->to_expr();
    if (canonical.hi() < 0) return true;
    auto top = symbolic_max(*form);
    return top && top->to_expr().hi() < 0;
  }

  Expr rebuild(const Expr& e) {
    Expr a = run(e.a()), b = run(e.b()), c = run(e.c());
    if (a == e.a() && b == e.b() && c == e.c()) return e;
    try {
      if (e.kind() == ExprKind::Select) return make_select(a, b, c);
      if (e.kind() == ExprKind::Not) return make_not(a);
      return make_binary(e.kind(), a, b);
    } catch (const Error&) {
      return e;  // e.g. a divisor that simplifies to 0: evaluation reports it, simplify keeps it
    }
  }

  Expr node(Expr e) {
    for (int round = 0; round < kMaxRounds; ++round) {
      if (!e.is_const() && e.lo() == e.hi()) return Expr(e.lo());
      if (e.kind() == ExprKind::Const || e.kind() == ExprKind::Var) return e;
      std::optional<Expr> changed = normalize(e);
      if (!changed) {
        changed = rewrite::apply_first(simplifier_rules(), e, [this](const Expr& c) { return prove(c); });
      }
      if (!changed || *changed == e) return e;
      e = run_fresh(*changed);
    }
    return e;
  }

  // Simplifies a freshly built expression whose parts may not be canonical.
  Expr run_fresh(const Expr& e) {
    if (depth_ > kMaxDepth) {
      complete_ = false;
      return e;
    }
    ++depth_;
    Expr rebuilt = rebuild(e);
    --depth_;
    return rebuilt;
  }

  std::optional<Expr> normalize(const Expr& e) {
    try {
      switch (e.kind()) {
        case ExprKind::Add:
        case ExprKind::Mul: return normalize_sum(e);
        case ExprKind::Div: return normalize_divmod(e, true);
        case ExprKind::Mod: return normalize_divmod(e, false);
        default: return std::nullopt;
      }
    } catch (const Error&) {
      return std::nullopt;  // overflow while rearranging: keep the expression as it is
    }
  }

  std::optional<Expr> normalize_sum(const Expr& e) {
    auto form = LinearForm::of(e);
    if (!form) return std::nullopt;
    Expr canonical = form->to_expr();
    if (canonical == e) return std::nullopt;
    return canonical;
  }

  std::optional<Expr> normalize_divmod(const Expr& e, bool is_div) {
    Expr d = e.b();
    // Only non-negative divisors are normalised; a zero divisor makes the
    // original an evaluation error, so the divisor may be taken as positive.
    if (d.lo() < 0) return std::nullopt;
    auto form = LinearForm::of(e.a());
    if (!form) return std::nullopt;
    if (d.is_const()) return divmod_by_constant(e, *form, d.value(), is_div);
    return divmod_by_symbol(e, *form, d, is_div);
  }

  std::optional<Expr> divmod_by_constant(const Expr& e, const LinearForm& x, int64_t c, bool is_div) {
    int64_t g = std::gcd(x.gcd(), c);
    if (g > 1) {  // (g·x) / (g·c) = x / c and (g·x) % (g·c) = g·(x % c)
      Expr reduced = x.divided_by(g).to_expr();
      return is_div ? make_div(reduced, Expr(c / g)) : make_mul(make_mod(reduced, Expr(c / g)), Expr(g));
    }
    LinearForm quotient, rest;
    for (const auto& [term, coefficient] : x.terms) {
      if (coefficient % c == 0) {
        quotient.add(term, coefficient / c);
      } else {
        rest.add(term, coefficient);
      }
    }
    rest.constant = x.constant;
    if (!is_div) rest.constant = floormod(rest.constant, c);
    Expr r = rest.to_expr();
    bool one_period = !bound_is_inf(r.lo()) && !bound_is_inf(r.hi()) && floordiv(r.lo(), c) == floordiv(r.hi(), c);
    if (is_div) {
      if (one_period) {
        quotient.constant = checked_add(quotient.constant, floordiv(r.lo(), c));
        return quotient.to_expr();
      }
      if (auto factored = factor_divmod(rest, c, true)) return make_add(quotient.to_expr(), *factored);
      if (quotient.terms.empty()) return std::nullopt;
      return make_add(quotient.to_expr(), make_div(r, Expr(c)));
    }
    if (one_period) return make_add(r, Expr(-floordiv(r.lo(), c) * c));
    if (auto factored = factor_divmod(rest, c, false)) return factored;
    Expr m = make_mod(r, Expr(c));
    return m == e ? std::nullopt : std::optional<Expr>(m);
  }

  // x = k·A + B with k | c and 0 <= B < k (the index of merged dims, an offset into them):
  // x / c = A / (c/k) and x % c = (A % (c/k))·k + B. Tries the largest k first.
  std::optional<Expr> factor_divmod(const LinearForm& x, int64_t c, bool is_div) {
    std::vector<int64_t> candidates;
    for (const auto& [term, coefficient] : x.terms) {
      int64_t k = coefficient < 0 ? -coefficient : coefficient;
      if (k > 1 && c % k == 0) candidates.push_back(k);
    }
    std::sort(candidates.rbegin(), candidates.rend());
    for (int64_t k : candidates) {
      LinearForm high, low;  // the constant's multiple of k goes with A
      high.constant = floordiv(x.constant, k);
      low.constant = floormod(x.constant, k);
      for (const auto& [term, coefficient] : x.terms) {
        if (coefficient % k == 0) {
          high.add(term, coefficient / k);
        } else {
          low.add(term, coefficient);
        }
      }
      Expr b = low.to_expr();
      if (b.lo() < 0 || b.hi() >= k) continue;
      Expr a = high.to_expr();
      if (is_div) return make_div(a, Expr(c / k));
      return make_add(make_mul(make_mod(a, Expr(c / k)), Expr(k)), b);
    }
    return std::nullopt;
  }

  // Division by a positive symbolic divisor d (a sum of monomials, e.g. the
  // product of dynamic dims past + seq): multiples Q·d of d come out of the
  // quotient (polynomial division: Q·d must appear term by term in x); a
  // remainder provably in [0, d) vanishes. This undoes the flatten/unflatten
  // of a reshape over dynamic dims.
  std::optional<Expr> divmod_by_symbol(const Expr& e, const LinearForm& x, const Expr& d, bool is_div) {
    auto d_form = LinearForm::of(d);
    if (!d_form || d_form->terms.empty()) return std::nullopt;
    auto [quotient, rest] = divide_polynomial(x, *d_form);
    Expr r = rest.to_expr();
    bool in_range = r.lo() >= 0 && prove(make_lt(r, d));
    if (!in_range) {
      // d = m·k: x = k·A + B with 0 <= B < k gives x / d = A / m and
      // x % d = (A % m)·k + B (heads merged across a dynamic length: k = 64·T).
      int64_t g = d_form->gcd();
      for (int64_t m = 2; m <= 64 && m <= g; ++m) {
        if (g % m != 0) continue;
        LinearForm k = d_form->divided_by(m);
        Expr k_expr = k.to_expr();
        auto [high, low] = divide_polynomial(x, k);
        Expr b = low.to_expr();
        if (high.terms.empty() || b.lo() < 0 || !prove(make_lt(b, k_expr))) continue;
        Expr a = high.to_expr();
        if (is_div) return make_div(a, Expr(m));
        return make_add(make_mul(make_mod(a, Expr(m)), k_expr), b);
      }
    }
    if (is_div) {
      if (in_range) return quotient.to_expr();
      if (quotient.terms.empty() && quotient.constant == 0) return std::nullopt;
      return make_add(quotient.to_expr(), make_div(r, d));
    }
    if (in_range) return r;
    Expr m = make_mod(r, d);
    return m == e ? std::nullopt : std::optional<Expr>(m);
  }

  int depth_ = 0;
  bool complete_ = true;  // false once a depth limit cut simplification short
};

}  // namespace

Expr simplify(const Expr& e) {
  Simplifier s;
  return s.run(e);
}

int64_t known_factor(const Expr& e) {
  auto form = LinearForm::of(simplify(e));
  if (!form) return 1;
  int64_t g = form->gcd();
  return g < 0 ? -g : g;
}

bool prove(const Expr& condition) {
  Simplifier s;
  return s.prove(s.run(condition));
}

}  // namespace lumen
