#include "lumen/tc/ranges.h"

#include <algorithm>
#include <limits>
#include <set>
#include <sstream>

#include "lumen/tc/diagnostic.h"

namespace lumen::tc {

namespace {

constexpr int64_t kNone = std::numeric_limits<int64_t>::min();

struct Caps {
  int64_t lo = kNone;  // inclusive lower bound from where v > / >=
  int64_t hi = kNone;  // exclusive upper bound from where v < / <=
};

std::string describe(const Constraint& c, const Scope& scope) {
  std::ostringstream out;
  if (c.index) out << "index '" << source_text(scope.source, c.index->span) << "' of ";
  out << c.tensor << " (dim " << c.dim << ", size " << c.size << ")";
  return out.str();
}

std::string ranges_text(const Affine& form, const std::map<std::string, Range>& ranges) {
  std::string out;
  for (const auto& [v, c] : form.coeff) {
    auto it = ranges.find(v);
    if (it == ranges.end()) continue;
    out += (out.empty() ? "" : ", ") + v + " in " + std::to_string(it->second.lo) + ":" + std::to_string(it->second.hi);
  }
  return out;
}

class Inference {
 public:
  Inference(const Statement& s, const std::vector<IndexVar>& vars, const std::vector<Constraint>& cs, const Scope& scope)
      : statement_(s), vars_(vars), constraints_(cs), scope_(scope) {}

  std::map<std::string, Range> run() {
    read_wheres();
    while (solve_round()) {
    }
    for (const IndexVar& v : vars_) {
      if (!known_.count(v.name)) explain_unknown(v);
    }
    for (const Constraint& c : constraints_) check(c);
    return known_;
  }

 private:
  const IndexVar* find_var(const std::string& name) const {
    for (const IndexVar& v : vars_) {
      if (v.name == name) return &v;
    }
    return nullptr;
  }

  void read_wheres() {
    std::set<std::string> seen_in;
    for (const Where& w : statement_.wheres) {
      if (!find_var(w.var)) {
        fail_at(scope_.source, w.pos, "where names '", w.var, "', which is no index variable of this statement");
      }
      Caps& caps = caps_[w.var];
      switch (w.kind) {
        case Where::Kind::In: {
          if (!seen_in.insert(w.var).second) fail_at(scope_.source, w.pos, "'", w.var, "' is given two ranges");
          Range r{constant_value(*w.lo, scope_, "range bound"), constant_value(*w.hi, scope_, "range bound")};
          if (r.lo >= r.hi) fail_at(scope_.source, w.pos, "the range ", r.lo, ":", r.hi, " of '", w.var, "' is empty");
          known_[w.var] = r;
          break;
        }
        case Where::Kind::Lt: caps.hi = constant_value(*w.hi, scope_, "bound"); break;
        case Where::Kind::Le: caps.hi = checked_add(constant_value(*w.hi, scope_, "bound"), 1, "bound"); break;
        case Where::Kind::Gt: caps.lo = checked_add(constant_value(*w.lo, scope_, "bound"), 1, "bound"); break;
        case Where::Kind::Ge: caps.lo = constant_value(*w.lo, scope_, "bound"); break;
      }
    }
    for (const auto& [v, caps] : caps_) {  // both sides bounded: a range, as if given with 'in'
      if (!known_.count(v) && caps.lo != kNone && caps.hi != kNone) set_range(v, caps.lo, caps.hi - 1, nullptr);
    }
  }

  // The single unknown variable of an affine constraint, or empty.
  std::string sole_unknown(const Constraint& c) const {
    std::string unknown;
    for (const auto& [v, coeff] : c.form->coeff) {
      if (known_.count(v)) continue;
      if (!unknown.empty()) return {};
      unknown = v;
    }
    return unknown;
  }

  // Narrows [lo, hi] (inclusive) of `v` so that c stays in bounds.
  void narrow(const Constraint& c, const std::string& v, int64_t* lo, int64_t* hi) const {
    Affine rest = *c.form;
    int64_t a = rest.coeff.at(v);
    rest.coeff.erase(v);
    Interval r = interval_of(rest, known_);
    int64_t top = c.size - 1;
    if (a == std::numeric_limits<int64_t>::min()) fail_at(scope_.source, c.pos, "index coefficient out of range");
    int64_t room_hi = checked_add(top, checked_mul(r.hi, -1, "index bound"), "index bound");  // top - r.hi
    // 0 <= a*v + r <= top for every r in [r.lo, r.hi].
    int64_t vlo, vhi;
    if (a > 0) {
      vlo = checked_mul(floor_div(r.lo, a), -1, "index bound");  // ceil(-r.lo / a)
      vhi = floor_div(room_hi, a);
    } else {
      int64_t b = -a;
      vlo = checked_mul(floor_div(room_hi, b), -1, "index bound");  // ceil((r.hi - top) / b)
      vhi = floor_div(r.lo, b);
    }
    *lo = std::max(*lo, vlo);
    *hi = std::min(*hi, vhi);
  }

  bool solve_round() {
    std::map<std::string, std::pair<int64_t, int64_t>> found;
    std::map<std::string, const Constraint*> last;
    for (const Constraint& c : constraints_) {
      if (!c.form) continue;
      std::string v = sole_unknown(c);
      if (v.empty()) continue;
      auto& bounds = found.try_emplace(v, kNone + 1, std::numeric_limits<int64_t>::max()).first->second;
      narrow(c, v, &bounds.first, &bounds.second);
      last[v] = &c;
    }
    for (const auto& [v, bounds] : found) {
      int64_t lo = bounds.first, hi = bounds.second;
      auto caps = caps_.find(v);
      if (caps != caps_.end() && caps->second.lo != kNone) lo = std::max(lo, caps->second.lo);
      if (caps != caps_.end() && caps->second.hi != kNone) hi = std::min(hi, caps->second.hi - 1);
      set_range(v, lo, hi, last[v]);
    }
    return !found.empty();
  }

  void set_range(const std::string& v, int64_t lo, int64_t hi, const Constraint* from) {
    if (lo > hi) {
      Pos at = from ? from->pos : find_var(v)->pos;
      std::string why = from ? " reading " + describe(*from, scope_) : std::string(" from its where bounds");
      fail_at(scope_.source, at, "the range of '", v, "' is empty: no value of it keeps every read in bounds (", why.substr(1),
              "); check the sizes of the tensors it indexes");
    }
    known_[v] = Range{lo, hi + 1};
  }

  [[noreturn]] void explain_unknown(const IndexVar& v) const {
    for (const Constraint& c : constraints_) {
      if (c.form && c.form->coeff.count(v.name)) {
        std::string others;
        for (const auto& [w, coeff] : c.form->coeff) {
          if (w != v.name && !known_.count(w)) others += (others.empty() ? "'" : ", '") + w + "'";
        }
        fail_at(scope_.source, c.pos, "the range of '", v.name, "' is ambiguous: ", describe(c, scope_), " also depends on ",
                others, ", whose range is unknown too; add 'where ", v.name, " in lo:hi'");
      }
    }
    bool is_constant_like = !scope_.is_name(v.name);
    fail_at(scope_.source, v.pos, "cannot infer the range of '", v.name, "': it is not an affine index of any tensor read",
            is_constant_like ? " (if it is meant to be a parameter or size, check its spelling)" : "",
            "; add 'where ", v.name, " in lo:hi'");
  }

  void check(const Constraint& c) const {
    std::optional<Interval> values;
    if (c.form) values = interval_of(*c.form, known_);
    else if (c.index) values = interval_of(*c.index, scope_, known_);
    if (!values) return;  // an index read from a tensor: checked when the program runs (body.cpp)
    if (values->lo >= 0 && values->hi < c.size) return;
    int64_t bad = values->lo < 0 ? values->lo : values->hi;
    std::string over = c.form ? ranges_text(*c.form, known_) : std::string("the inferred ranges");
    fail_at(scope_.source, c.pos, describe(c, scope_), " reaches ", bad, " for ", over,
            ": out of bounds; narrow the ranges with 'where'");
  }

  const Statement& statement_;
  const std::vector<IndexVar>& vars_;
  const std::vector<Constraint>& constraints_;
  const Scope& scope_;
  std::map<std::string, Caps> caps_;
  std::map<std::string, Range> known_;
};

}  // namespace

std::map<std::string, Range> infer_ranges(const Statement& statement, const std::vector<IndexVar>& vars,
                                          const std::vector<Constraint>& constraints, const Scope& scope) {
  return Inference(statement, vars, constraints, scope).run();
}

}  // namespace lumen::tc
