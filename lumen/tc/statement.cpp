#include "lumen/tc/statement.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "lumen/ops/elementwise.h"
#include "lumen/ops/reduce.h"
#include "lumen/tc/body.h"
#include "lumen/tc/contraction.h"
#include "lumen/tc/diagnostic.h"
#include "lumen/tc/ranges.h"

namespace lumen::tc {

namespace {

bool has_var(const std::vector<IndexVar>& vars, const std::string& name) {
  return std::any_of(vars.begin(), vars.end(), [&](const IndexVar& v) { return v.name == name; });
}

// Index variables (first use first) and the reads that bound them.
class Collector {
 public:
  explicit Collector(const Scope& scope) : scope_(scope) {}

  void lhs(const Statement& s) {
    for (const IndexVar& v : s.indices) {
      if (scope_.is_name(v.name)) {
        fail_at(scope_.source, v.pos, "'", v.name, "' is a ", scope_.tensors.count(v.name) ? "tensor" : "parameter or size",
                ", not an index variable; left-hand sides take plain index names");
      }
      if (has_var(vars, v.name)) fail_at(scope_.source, v.pos, "index '", v.name, "' appears twice on the left-hand side");
      vars.push_back(v);
    }
  }

  void walk(const Ast& e, bool in_index) {
    if (e.kind == NodeKind::Name && !scope_.is_name(e.text) && !has_var(vars, e.text)) vars.push_back({e.text, e.span});
    if (e.kind == NodeKind::Access) read(e);
    for (const AstPtr& a : e.args) walk(*a, in_index || e.kind == NodeKind::Access);
  }

  // The previous (or declared) shape of the defined tensor bounds its indices.
  void bound_lhs(const Statement& s, const Shape& shape, const std::string& what) {
    for (size_t d = 0; d < s.indices.size() && d < shape.size(); ++d) {
      Constraint c;
      c.pos = s.indices[d].pos;
      c.tensor = what;
      c.dim = d;
      c.size = shape[d].value();
      Affine form;
      form.coeff[s.indices[d].name] = 1;
      c.form = form;
      constraints.push_back(c);
    }
  }

  std::vector<IndexVar> vars;
  std::vector<Constraint> constraints;

 private:
  void read(const Ast& e) {
    const Tensor& t = scope_.tensors.at(e.text);  // known: check_def ran
    for (size_t j = 0; j < e.args.size(); ++j) {
      Constraint c;
      c.index = e.args[j].get();
      c.pos = e.args[j]->span;
      c.tensor = e.text;
      c.dim = j;
      c.size = t.shape()[j].value();
      c.form = affine_form(*e.args[j], scope_);
      constraints.push_back(c);
    }
  }

  const Scope& scope_;
};

Tensor reduce(const Statement& s, const Tensor& body, const std::vector<int>& axes) {
  if (axes.empty()) return body;
  switch (s.reduction) {
    case Reduction::Sum: return ops::sum(body, axes);
    case Reduction::Max: return ops::amax(body, axes);
    case Reduction::Min: return ops::amin(body, axes);
    case Reduction::Product: return ops::prod(body, axes);
    case Reduction::None: break;
  }
  return body;
}

// The reduction of the statement's right-hand side over `reduced`, laid out
// as the built-in ops lay out theirs: short windows (every reduced range at
// most kInlineWindow, a pooling or depthwise window) sit before the last kept
// dim and are reduced one axis at a time, so the output's last dim stays the
// SIMD dim and each window step is written out inline reading a vector.
Tensor reduce_in_layout(const Statement& s, const std::vector<IterDim>& kept, const std::vector<IterDim>& reduced,
                        const Scope& scope) {
  constexpr int64_t kInlineWindow = 4;  // kernel::kInlineReduceExtent: such reductions are written out inline
  bool windows = !kept.empty() && !reduced.empty() && std::all_of(reduced.begin(), reduced.end(), [](const IterDim& d) {
    return d.range.hi - d.range.lo <= kInlineWindow;
  });
  std::vector<IterDim> space = kept;
  if (windows) space.pop_back();
  space.insert(space.end(), reduced.begin(), reduced.end());
  if (windows) space.push_back(kept.back());
  Tensor body = lower_body(*s.rhs, space, scope);
  if (s.reduction != Reduction::None && body.dtype() == DType::Bool && !reduced.empty()) {
    fail_at(scope.source, s.op_pos, "'", s.op_text, "' reduces bools; cast the right-hand side with int(...) or float(...)");
  }
  std::vector<int> axes(reduced.size());
  std::iota(axes.begin(), axes.end(), static_cast<int>(kept.size() - (windows ? 1 : 0)));
  if (windows) {  // one short reduction per window axis, each written out inline (not one merged loop)
    for (auto a = axes.rbegin(); a != axes.rend(); ++a) body = reduce(s, body, {*a});
    return body;
  }
  return reduce(s, body, axes);  // adjacent axes are merged into one (ops::sum, amax, ...)
}

Tensor accumulate(const Statement& s, const Tensor& previous, const Tensor& value, const Scope& scope) {
  if (previous.dtype() != value.dtype()) {
    fail_at(scope.source, s.op_pos, "type mismatch: ", s.tensor, " is ", dtype_name(previous.dtype()), " but '", s.op_text,
            "' accumulates ", dtype_name(value.dtype()), " into it");
  }
  switch (s.reduction) {
    case Reduction::Sum: return ops::add(previous, value);
    case Reduction::Max: return ops::maximum(previous, value);
    case Reduction::Min: return ops::minimum(previous, value);
    case Reduction::Product: return ops::mul(previous, value);
    case Reduction::None: break;
  }
  return value;
}

}  // namespace

Tensor lower_statement(const Statement& s, const Scope& scope) {
  Collector collect(scope);
  collect.lhs(s);
  collect.walk(*s.rhs, false);
  bool accumulating = !s.init && s.reduction != Reduction::None;
  auto previous = scope.tensors.find(s.tensor);
  if (accumulating) {
    if (previous == scope.tensors.end()) {
      fail_at(scope.source, s.op_pos, "'", s.op_text, "' accumulates into ", s.tensor, ", which has no value yet; use '",
              s.op_text, "!' to start from the reduction's identity");
    }
    collect.bound_lhs(s, previous->second.shape(), s.tensor + " (its previous value)");
  } else if (auto declared = scope.declared.find(s.tensor); declared != scope.declared.end()) {
    collect.bound_lhs(s, declared->second, s.tensor + " (as declared)");
  }
  std::map<std::string, Range> ranges = infer_ranges(s, collect.vars, collect.constraints, scope);
  std::vector<IterDim> space;
  for (const IndexVar& v : s.indices) {
    const Range& r = ranges.at(v.name);
    if (r.lo != 0) {
      fail_at(scope.source, v.pos, "output index '", v.name, "' ranges over ", r.lo, ":", r.hi,
              ", but an output's indices start at 0; shift the reads (e.g. A(", v.name, " + ", r.lo, "))");
    }
    space.push_back({v.name, r});
  }
  for (const IndexVar& v : collect.vars) {
    if (has_var(s.indices, v.name)) continue;
    if (s.reduction == Reduction::None) {
      fail_at(scope.source, v.pos, "'", v.name, "' is not on the left-hand side, so it would be reduced over, but '=' does not ",
              "reduce; use +=!, *=!, max=! or min=! (or add it to ", s.tensor, "'s indices)");
    }
    space.push_back({v.name, ranges.at(v.name)});
  }
  std::vector<AstPtr> factors = product_factors(s.rhs);
  Tensor value;
  std::vector<IterDim> kept(space.begin(), space.begin() + static_cast<long>(s.indices.size()));
  std::vector<IterDim> reduced(space.begin() + static_cast<long>(kept.size()), space.end());
  std::optional<Tensor> pair;
  if (s.reduction == Reduction::Sum && factors.size() == 2) pair = two_read_contraction(factors, kept, reduced, scope);
  if (pair) {
    value = *pair;
  } else if (s.reduction == Reduction::Sum && factors.size() > 2) {  // sum of products: contract in steps
    value = contract(factors, kept, reduced, scope);
  } else {
    value = reduce_in_layout(s, kept, reduced, scope);
  }
  return accumulating ? accumulate(s, previous->second, value, scope) : value;
}

}  // namespace lumen::tc
