#include "lumen/tc/index_form.h"

#include <algorithm>
#include <limits>

#include "lumen/tc/diagnostic.h"

namespace lumen::tc {

int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail("tc: ", what, " overflows int64 (", a, " + ", b, ")");
  return r;
}

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail("tc: ", what, " overflows int64 (", a, " * ", b, ")");
  return r;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0 || (b == -1 && a == std::numeric_limits<int64_t>::min())) fail("tc: index division ", a, " / ", b, " is undefined");
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

namespace {

Affine scaled(const Affine& a, int64_t k) {
  Affine r;
  if (k == 0) return r;
  for (const auto& [v, c] : a.coeff) r.coeff[v] = checked_mul(c, k, "index coefficient");
  r.constant = checked_mul(a.constant, k, "index constant");
  return r;
}

Affine plus(const Affine& a, const Affine& b) {
  Affine r = a;
  for (const auto& [v, c] : b.coeff) {
    int64_t sum = checked_add(r.coeff[v], c, "index coefficient");
    if (sum == 0) r.coeff.erase(v);
    else r.coeff[v] = sum;
  }
  r.constant = checked_add(a.constant, b.constant, "index constant");
  return r;
}

std::optional<Affine> name_form(const Ast& e, const Scope& scope) {
  Affine r;
  if (auto it = scope.ints.find(e.text); it != scope.ints.end()) {
    r.constant = it->second;
  } else if (scope.floats.count(e.text)) {
    fail_at(scope.source, e.span, "'", e.text, "' is a float scalar and cannot index a tensor (declare it int)");
  } else if (scope.tensors.count(e.text)) {
    fail_at(scope.source, e.span, "'", e.text, "' is a tensor; read it with indices, ", e.text, "(...)");
  } else {
    r.coeff[e.text] = 1;
  }
  return r;
}

std::optional<Affine> binary_form(const Ast& e, const Scope& scope) {
  const std::string& op = e.text;
  if (op != "+" && op != "-" && op != "*" && op != "/" && op != "%") {
    fail_at(scope.source, e.pos, "'", op, "' gives a bool, not an index (indices are integer expressions)");
  }
  auto a = affine_form(*e.args[0], scope);
  auto b = affine_form(*e.args[1], scope);
  if (!a || !b) return std::nullopt;
  if (op == "+") return plus(*a, *b);
  if (op == "-") return plus(*a, scaled(*b, -1));
  if (op == "*") {
    if (a->coeff.empty()) return scaled(*b, a->constant);
    if (b->coeff.empty()) return scaled(*a, b->constant);
    return std::nullopt;
  }
  if (!a->coeff.empty() || !b->coeff.empty()) return std::nullopt;
  if (b->constant == 0) fail_at(scope.source, e.span, "division by zero in the index '", source_text(scope.source, e.span), "'");
  Affine r;
  r.constant = op == "/" ? floor_div(a->constant, b->constant) : floor_mod(a->constant, b->constant);
  return r;
}

}  // namespace

std::optional<Affine> affine_form(const Ast& e, const Scope& scope) {
  switch (e.kind) {
    case NodeKind::Number: {
      if (!e.integer) fail_at(scope.source, e.span, "index '", e.text, "' is not an integer");
      Affine r;
      r.constant = static_cast<int64_t>(e.number);
      return r;
    }
    case NodeKind::Name:
      return name_form(e, scope);
    case NodeKind::Unary: {
      if (e.text != "-") fail_at(scope.source, e.pos, "'!' gives a bool, not an index");
      auto a = affine_form(*e.args[0], scope);
      if (!a) return std::nullopt;
      return scaled(*a, -1);
    }
    case NodeKind::Binary:
      return binary_form(e, scope);
    default:
      return std::nullopt;  // tensor reads, calls, ?: — computed, then gathered
  }
}

int64_t constant_value(const Ast& e, const Scope& scope, const char* what) {
  auto form = affine_form(e, scope);
  if (!form || !form->coeff.empty()) {
    fail_at(scope.source, e.span, what, " '", source_text(scope.source, e.span),
            "' must be a constant: integers, sizes and int scalars with + - * / %");
  }
  return form->constant;
}

Interval interval_of(const Affine& form, const std::map<std::string, Range>& ranges) {
  Interval r{form.constant, form.constant};
  for (const auto& [v, c] : form.coeff) {
    const Range& range = ranges.at(v);
    int64_t a = checked_mul(c, range.lo, "index bound"), b = checked_mul(c, range.hi - 1, "index bound");
    r.lo = checked_add(r.lo, std::min(a, b), "index bound");
    r.hi = checked_add(r.hi, std::max(a, b), "index bound");
  }
  return r;
}

namespace {

Interval corners(Interval a, Interval b, int64_t (*f)(int64_t, int64_t)) {
  int64_t v[4] = {f(a.lo, b.lo), f(a.lo, b.hi), f(a.hi, b.lo), f(a.hi, b.hi)};
  return {*std::min_element(v, v + 4), *std::max_element(v, v + 4)};
}

std::optional<Interval> binary_interval(const Ast& e, const Scope& scope, const std::map<std::string, Range>& ranges) {
  auto a = interval_of(*e.args[0], scope, ranges);
  auto b = interval_of(*e.args[1], scope, ranges);
  if (!a || !b) return std::nullopt;
  const std::string& op = e.text;
  if (op == "+") return Interval{checked_add(a->lo, b->lo, "index bound"), checked_add(a->hi, b->hi, "index bound")};
  if (op == "-") {
    return Interval{checked_add(a->lo, checked_mul(b->hi, -1, "index bound"), "index bound"),
                    checked_add(a->hi, checked_mul(b->lo, -1, "index bound"), "index bound")};
  }
  if (op == "*") return corners(*a, *b, [](int64_t x, int64_t y) { return checked_mul(x, y, "index bound"); });
  if (b->lo <= 0 && b->hi >= 0) {
    fail_at(scope.source, e.args[1]->span, "the divisor '", source_text(scope.source, e.args[1]->span), "' may be 0");
  }
  if (op == "/") return corners(*a, *b, floor_div);
  if (b->lo > 0) return Interval{0, b->hi - 1};
  return Interval{b->lo + 1, 0};
}

}  // namespace

std::optional<Interval> interval_of(const Ast& e, const Scope& scope, const std::map<std::string, Range>& ranges) {
  switch (e.kind) {
    case NodeKind::Number:
      return Interval{static_cast<int64_t>(e.number), static_cast<int64_t>(e.number)};
    case NodeKind::Name: {
      if (auto it = scope.ints.find(e.text); it != scope.ints.end()) return Interval{it->second, it->second};
      auto it = ranges.find(e.text);
      if (it == ranges.end()) return std::nullopt;
      return Interval{it->second.lo, it->second.hi - 1};
    }
    case NodeKind::Unary: {
      auto a = interval_of(*e.args[0], scope, ranges);
      if (!a) return std::nullopt;
      return Interval{checked_mul(a->hi, -1, "index bound"), checked_mul(a->lo, -1, "index bound")};
    }
    case NodeKind::Binary:
      return binary_interval(e, scope, ranges);
    case NodeKind::Ternary: {
      auto a = interval_of(*e.args[1], scope, ranges), b = interval_of(*e.args[2], scope, ranges);
      if (!a || !b) return std::nullopt;
      return Interval{std::min(a->lo, b->lo), std::max(a->hi, b->hi)};
    }
    case NodeKind::Call: {
      if ((e.text == "max" || e.text == "min") && e.args.size() == 2) {
        auto a = interval_of(*e.args[0], scope, ranges), b = interval_of(*e.args[1], scope, ranges);
        if (!a || !b) return std::nullopt;
        if (e.text == "max") return Interval{std::max(a->lo, b->lo), std::max(a->hi, b->hi)};
        return Interval{std::min(a->lo, b->lo), std::min(a->hi, b->hi)};
      }
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace lumen::tc
