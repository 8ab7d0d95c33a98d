#include "lumen/core/linear_form.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "lumen/core/error.h"
#include "lumen/core/int_math.h"

namespace lumen {

namespace {

constexpr size_t kMaxDistributedTerms = 64;

void collect_factors(const Expr& e, int64_t* constant, std::vector<Expr>* factors) {
  if (e.kind() == ExprKind::Mul) {
    collect_factors(e.a(), constant, factors);
    collect_factors(e.b(), constant, factors);
  } else if (e.is_const()) {
    *constant = checked_mul(*constant, e.value());
  } else {
    factors->push_back(e);
  }
}

// Order: positive coefficients before negative, larger magnitude first, then structure.
bool term_before(const std::pair<Expr, int64_t>& x, const std::pair<Expr, int64_t>& y) {
  bool xp = x.second > 0, yp = y.second > 0;
  if (xp != yp) return xp;
  int64_t ax = bound_abs(x.second), ay = bound_abs(y.second);
  if (ax != ay) return ax > ay;
  return expr_less(x.first, y.first);
}

}  // namespace

std::vector<Expr> product_factors(const Expr& e) {
  int64_t constant = 1;
  std::vector<Expr> factors;
  collect_factors(e, &constant, &factors);
  std::sort(factors.begin(), factors.end(), expr_less);
  return factors;
}

Expr make_product(const std::vector<Expr>& factors) {
  Expr result = Expr(1);
  for (const Expr& f : factors) result = make_mul(result, f);
  return result;
}

std::optional<LinearForm> LinearForm::of(const Expr& e) {
  LinearForm form;
  try {
    form.add(e, 1);
  } catch (const Error&) {
    return std::nullopt;
  }
  return form;
}

void LinearForm::add(const LinearForm& other, int64_t scale) {
  constant = checked_add(constant, checked_mul(other.constant, scale));
  for (const auto& [term, coefficient] : other.terms) add(term, checked_mul(coefficient, scale));
}

void LinearForm::add(const Expr& e, int64_t coefficient) {
  if (coefficient == 0) return;
  switch (e.kind()) {
    case ExprKind::Const: constant = checked_add(constant, checked_mul(e.value(), coefficient)); return;
    case ExprKind::Add:
      add(e.a(), coefficient);
      add(e.b(), coefficient);
      return;
    case ExprKind::Mul: {
      int64_t k = 1;
      std::vector<Expr> factors;
      collect_factors(e, &k, &factors);
      coefficient = checked_mul(coefficient, k);
      auto sum = std::find_if(factors.begin(), factors.end(), [](const Expr& f) { return f.kind() == ExprKind::Add; });
      if (sum != factors.end()) {  // distribute the rest of the product over the sum
        LinearForm inner;
        inner.add(*sum, 1);
        if (inner.terms.size() <= kMaxDistributedTerms) {
          factors.erase(sum);
          Expr rest = make_product(factors);
          add(rest, checked_mul(inner.constant, coefficient));
          for (const auto& [term, c] : inner.terms) add(make_mul(term, rest), checked_mul(c, coefficient));
          return;
        }
      }
      if (factors.empty()) {
        constant = checked_add(constant, coefficient);
        return;
      }
      std::sort(factors.begin(), factors.end(), expr_less);
      add_atom(make_product(factors), coefficient);
      return;
    }
    default: add_atom(e, coefficient); return;
  }
}

void LinearForm::add_atom(const Expr& e, int64_t coefficient) {
  // An atom: combine with its twin, and recombine (x / d)·d + x % d = x.
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].first == e) {
      terms[i].second = checked_add(terms[i].second, coefficient);
      if (terms[i].second == 0) terms.erase(terms.begin() + static_cast<long>(i));
      return;
    }
  }
  if (e.kind() == ExprKind::Mod && e.b().is_const() && e.b().value() > 0) {
    Expr quotient = make_div(e.a(), e.b());
    int64_t want = checked_mul(coefficient, e.b().value());
    for (size_t i = 0; i < terms.size(); ++i) {
      if (terms[i].first == quotient && terms[i].second == want) {
        terms.erase(terms.begin() + static_cast<long>(i));
        add(e.a(), coefficient);
        return;
      }
      // (x / d) % c · d + x % d = x % (c·d): the digits of x in mixed radix, put back together.
      const Expr& t = terms[i].first;
      if (terms[i].second == want && t.kind() == ExprKind::Mod && t.b().is_const() && t.b().value() > 0 &&
          t.a() == quotient) {
        int64_t period = checked_mul(t.b().value(), e.b().value());
        terms.erase(terms.begin() + static_cast<long>(i));
        add_atom(make_mod(e.a(), Expr(period)), coefficient);
        return;
      }
    }
  }
  // The same pair met the other way round: (x / d) % c · k·d, then x % d · k.
  if (e.kind() == ExprKind::Mod && e.b().is_const() && e.b().value() > 0 && e.a().kind() == ExprKind::Div &&
      e.a().b().is_const() && e.a().b().value() > 0 && coefficient % e.a().b().value() == 0) {
    const Expr& x = e.a().a();
    const int64_t d = e.a().b().value();
    Expr remainder = make_mod(x, Expr(d));
    for (size_t i = 0; i < terms.size(); ++i) {
      if (terms[i].first == remainder && terms[i].second == coefficient / d) {
        terms.erase(terms.begin() + static_cast<long>(i));
        add_atom(make_mod(x, Expr(checked_mul(e.b().value(), d))), coefficient / d);
        return;
      }
    }
  }
  if (e.kind() == ExprKind::Div && e.b().is_const() && e.b().value() > 0 && coefficient % e.b().value() == 0) {
    Expr remainder = make_mod(e.a(), e.b());
    int64_t want = coefficient / e.b().value();
    for (size_t i = 0; i < terms.size(); ++i) {
      if (terms[i].first == remainder && terms[i].second == want) {
        terms.erase(terms.begin() + static_cast<long>(i));
        add(e.a(), want);
        return;
      }
    }
  }
  terms.emplace_back(e, coefficient);
}

int64_t LinearForm::gcd() const {
  int64_t g = constant < 0 ? -constant : constant;
  for (const auto& [term, c] : terms) g = std::gcd(g, c < 0 ? -c : c);
  return g;
}

LinearForm LinearForm::divided_by(int64_t divisor) const {
  LinearForm out;
  out.constant = constant / divisor;
  for (const auto& [term, c] : terms) out.terms.emplace_back(term, c / divisor);
  return out;
}

Expr LinearForm::to_expr() const {
  std::vector<std::pair<Expr, int64_t>> sorted = terms;
  std::sort(sorted.begin(), sorted.end(), term_before);
  Expr result;
  for (const auto& [term, c] : sorted) {
    Expr t = make_mul(term, Expr(c));
    result = result.defined() ? make_add(result, t) : t;
  }
  if (!result.defined()) return Expr(constant);
  return make_add(result, Expr(constant));
}

}  // namespace lumen
