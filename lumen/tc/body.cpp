#include "lumen/tc/body.h"

#include <cmath>

#include "lumen/core/view.h"
#include "lumen/ops/elementwise.h"
#include "lumen/tc/diagnostic.h"
#include "lumen/tc/functions.h"
#include "lumen/tc/index_form.h"

namespace lumen::tc {

namespace {

// A number not yet given a dtype (it takes its partner's), or a tensor.
struct Value {
  Tensor tensor;
  bool literal = false;
  double number = 0;
  bool integer = false;
  Pos span;
};

const char* type_word(DType dtype) {
  switch (dtype) {
    case DType::F32: return "float";
    case DType::F16: return "half";
    case DType::BF16: return "bfloat16";
    case DType::I32: return "int";
    case DType::Bool: return "bool";
    default: return dtype_name(dtype);
  }
}

class BodyLowering {
 public:
  BodyLowering(const std::vector<IterDim>& space, const Scope& scope) : space_(space), scope_(scope) {
    for (const IterDim& d : space) shape_.push_back(Expr(d.range.hi - d.range.lo));
  }

  Tensor run(const Ast& e) {
    Value v = lower(e);
    Tensor t = v.literal ? literal(v, v.integer ? DType::I32 : DType::F32) : v.tensor;
    return t.shape() == shape_ ? t : t.expand(shape_);
  }

  Value lower(const Ast& e) {
    switch (e.kind) {
      case NodeKind::Number: return number(e.number, e.integer, e.span);
      case NodeKind::Name: return name(e);
      case NodeKind::Access: return tensor(access(e), e.span);
      case NodeKind::Unary: return unary(e);
      case NodeKind::Binary: return binary(e);
      case NodeKind::Call: return call(e);
      case NodeKind::Ternary: return choose(e, *e.args[0], *e.args[1], *e.args[2]);
    }
    fail_at(scope_.source, e.span, "unsupported expression");
  }

 private:
  static Value number(double x, bool integer, const Pos& span) {
    Value v;
    v.literal = true;
    v.number = x;
    v.integer = integer;
    v.span = span;
    return v;
  }
  static Value tensor(Tensor t, const Pos& span) {
    Value v;
    v.tensor = std::move(t);
    v.span = span;
    return v;
  }
  std::string text(const Value& v) const { return source_text(scope_.source, v.span); }

  Tensor literal(const Value& v, DType dtype) const {
    if (!is_float(dtype) && !v.integer) {
      fail_at(scope_.source, v.span, "type mismatch: ", v.number, " is not an integer but is used as ", type_word(dtype));
    }
    return scope_.graph->constant(v.number, dtype);
  }

  Value name(const Ast& e) {
    if (auto it = scope_.ints.find(e.text); it != scope_.ints.end()) return number(static_cast<double>(it->second), true, e.span);
    if (auto it = scope_.floats.find(e.text); it != scope_.floats.end()) {
      return tensor(scope_.graph->constant(it->second.value, it->second.dtype), e.span);
    }
    if (scope_.tensors.count(e.text)) fail_at(scope_.source, e.span, "'", e.text, "' is a tensor; read it with indices, ", e.text, "(...)");
    for (size_t d = 0; d < space_.size(); ++d) {
      if (space_[d].var != e.text) continue;
      Expr index = loop_index(shape_, d) + Expr(space_[d].range.lo);
      return tensor(scope_.graph->iota(index, shape_, DType::I32), e.span);
    }
    fail_at(scope_.source, e.span, "unknown name '", e.text, "'");
  }

  // `a / d` with `a` affine and `d` a positive constant: the affine part and d.
  std::optional<std::pair<Affine, int64_t>> divided_form(const Ast& index) const {
    if (index.kind != NodeKind::Binary || index.text != "/") return std::nullopt;
    auto divisor = affine_form(*index.args[1], scope_);
    if (!divisor || !divisor->coeff.empty() || divisor->constant <= 0) return std::nullopt;
    auto form = affine_form(*index.args[0], scope_);
    if (!form) return std::nullopt;
    return std::make_pair(*form, divisor->constant);
  }

  // A read at `a / d` along dim j (a group's statistic read per channel):
  // the dim repeated d times in place is read at `a`, a view, not a gather.
  // In bounds as the original: a / d in [0, n) exactly when a in [0, n·d).
  static Tensor repeated(const Tensor& t, size_t j, int64_t d) {
    Shape wide = t.shape(), merged = t.shape();
    wide.insert(wide.begin() + static_cast<std::ptrdiff_t>(j) + 1, Expr(d));
    merged[j] = Expr(checked_mul(merged[j].value(), d, "repeated dim"));
    return t.unsqueeze(static_cast<int>(j) + 1).expand(wide).reshape(merged);
  }

  Tensor access(const Ast& e) {
    Tensor t = scope_.tensors.at(e.text);
    std::vector<std::vector<int64_t>> coeff;
    std::vector<int64_t> constant;
    bool affine = true;
    for (size_t j = 0; j < e.args.size(); ++j) {
      const AstPtr& index = e.args[j];
      auto form = affine_form(*index, scope_);
      if (!form) {
        if (auto divided = divided_form(*index)) {
          t = repeated(t, j, divided->second);
          form = divided->first;
        }
      }
      if (!form) {
        affine = false;
        break;
      }
      std::vector<int64_t> row(space_.size(), 0);
      for (size_t d = 0; d < space_.size(); ++d) {
        if (auto it = form->coeff.find(space_[d].var); it != form->coeff.end()) row[d] = it->second;
      }
      coeff.push_back(row);
      constant.push_back(form->constant);
    }
    if (affine) return strided_read(t, coeff, constant, space_);
    return gathered_read(scope_.tensors.at(e.text), e);
  }

  // data[flat index] for indices that are not affine (computed or read from
  // tensors). An index outside its own dim makes the flat index -1, so the
  // Gather raises rather than reading a neighbouring row.
  Tensor gathered_read(const Tensor& t, const Ast& e) {
    Tensor flat, outside;
    int64_t stride = 1;
    for (size_t j = e.args.size(); j-- > 0;) {
      Value index = lower(*e.args[j]);
      Tensor i = index.literal ? literal(index, DType::I32) : index.tensor;
      if (i.dtype() != DType::I32) {
        fail_at(scope_.source, e.args[j]->span, "index '", text(index), "' is ", type_word(i.dtype()), "; indices are int");
      }
      Tensor term = stride == 1 ? i : ops::mul(i, scope_.graph->constant(static_cast<double>(stride), DType::I32));
      flat = flat.defined() ? ops::add(flat, term) : term;
      Tensor out_j = ops::logical_or(ops::lt(i, scope_.graph->constant(0, DType::I32)),
                                     ops::ge(i, scope_.graph->constant(static_cast<double>(t.shape()[j].value()), DType::I32)));
      outside = outside.defined() ? ops::logical_or(outside, out_j) : out_j;
      stride = checked_mul(stride, t.shape()[j].value(), "flat index");
    }
    flat = ops::where(outside, scope_.graph->constant(-1, DType::I32), flat);
    if (flat.shape() != shape_) flat = flat.expand(shape_);
    return t.reshape({Expr(stride)}).gather(flat, 0);
  }

  Value unary(const Ast& e) {
    Value a = lower(*e.args[0]);
    if (e.text == "-") {
      if (a.literal) return number(-a.number, a.integer, e.span);
      if (a.tensor.dtype() == DType::Bool) fail_at(scope_.source, e.pos, "'-' of a bool; cast with int(...) first");
      return tensor(ops::neg(a.tensor), e.span);
    }
    Tensor t = a.literal ? literal(a, DType::I32) : a.tensor;
    if (t.dtype() != DType::Bool) fail_at(scope_.source, e.pos, "'!' needs a bool (a comparison), '", text(a), "' is ", type_word(t.dtype()));
    return tensor(ops::logical_not(t), e.span);
  }

  // Both operands as tensors of one dtype; a number takes its partner's.
  std::pair<Tensor, Tensor> unify(const Value& a, const Value& b, const Pos& at, const char* what) {
    if (a.literal && b.literal) return {literal(a, a.integer && b.integer ? DType::I32 : DType::F32),
                                        literal(b, a.integer && b.integer ? DType::I32 : DType::F32)};
    if (a.literal) return {literal(a, b.tensor.dtype()), b.tensor};
    if (b.literal) return {a.tensor, literal(b, a.tensor.dtype())};
    if (a.tensor.dtype() != b.tensor.dtype()) {
      fail_at(scope_.source, at, "type mismatch in ", what, ": '", text(a), "' is ", type_word(a.tensor.dtype()), ", '", text(b),
              "' is ", type_word(b.tensor.dtype()), "; cast one with float(...) or int(...)");
    }
    return {a.tensor, b.tensor};
  }

  std::optional<Value> fold(const std::string& op, const Value& a, const Value& b, const Ast& e) const {
    if (!a.literal || !b.literal) return std::nullopt;
    bool integer = a.integer && b.integer;
    if (op == "+") return number(a.number + b.number, integer, e.span);
    if (op == "-") return number(a.number - b.number, integer, e.span);
    if (op == "*") return number(a.number * b.number, integer, e.span);
    if (op == "/" || op == "%") {
      if (b.number == 0 && integer) fail_at(scope_.source, e.span, "integer division by zero");
      if (!integer) return op == "/" ? number(a.number / b.number, false, e.span) : std::optional<Value>();
      if (std::fabs(a.number) > 9.0e15 || std::fabs(b.number) > 9.0e15) {
        fail_at(scope_.source, e.span, "integer constant out of range (beyond 9e15)");
      }
      auto x = static_cast<int64_t>(a.number), y = static_cast<int64_t>(b.number);
      return number(static_cast<double>(op == "/" ? floor_div(x, y) : floor_mod(x, y)), true, e.span);
    }
    return std::nullopt;
  }

  Value binary(const Ast& e) {
    Value a = lower(*e.args[0]), b = lower(*e.args[1]);
    const std::string& op = e.text;
    if (auto folded = fold(op, a, b, e)) return *folded;
    auto [x, y] = unify(a, b, e.pos, ("'" + op + "'").c_str());
    bool logical = op == "&&" || op == "||";
    if (logical != (x.dtype() == DType::Bool)) {
      fail_at(scope_.source, e.pos, logical ? "'" + op + "' needs bools (comparisons)" : "'" + op + "' of bools; cast with int(...) first",
              ", '", text(a), "' is ", type_word(x.dtype()));
    }
    Tensor r;
    if (op == "+") r = ops::add(x, y);
    else if (op == "-") r = ops::sub(x, y);
    else if (op == "*") r = ops::mul(x, y);
    else if (op == "/") r = is_float(x.dtype()) ? ops::div(x, y) : ops::floor_divide(x, y);
    else if (op == "%") r = ops::remainder(x, y);
    else if (op == "<") r = ops::lt(x, y);
    else if (op == "<=") r = ops::le(x, y);
    else if (op == ">") r = ops::gt(x, y);
    else if (op == ">=") r = ops::ge(x, y);
    else if (op == "==") r = ops::eq(x, y);
    else if (op == "!=") r = ops::ne(x, y);
    else if (op == "&&") r = ops::logical_and(x, y);
    else r = ops::logical_or(x, y);
    return tensor(r, e.span);
  }

  Value choose(const Ast& e, const Ast& cond, const Ast& then, const Ast& otherwise) {
    Value c = lower(cond);
    if (c.literal || c.tensor.dtype() != DType::Bool) {
      fail_at(scope_.source, cond.span, "the condition '", text(c), "' must be a bool (a comparison)");
    }
    auto [x, y] = unify(lower(then), lower(otherwise), e.pos, "the branches of a select");
    return tensor(ops::where(c.tensor, x, y), e.span);
  }

  Value call(const Ast& e) {
    if (e.text == "select") return choose(e, *e.args[0], *e.args[1], *e.args[2]);
    std::vector<Value> args;
    for (const AstPtr& a : e.args) args.push_back(lower(*a));
    DType cast;
    if (function_cast(e.text, &cast)) {
      const Value& a = args[0];
      if (a.literal) return tensor(scope_.graph->constant(is_float(cast) ? a.number : std::trunc(a.number), cast), e.span);
      return tensor(apply_function(e.text, {a.tensor}), e.span);
    }
    std::vector<Tensor> tensors;
    if (args.size() == 2) {
      auto [x, y] = unify(args[0], args[1], e.pos, (e.text + "(...)").c_str());
      tensors = {x, y};
    } else {
      tensors = {args[0].literal ? literal(args[0], args[0].integer && !function_needs_float(e.text) ? DType::I32 : DType::F32)
                                 : args[0].tensor};
    }
    DType dtype = tensors[0].dtype();
    if (dtype == DType::Bool || (function_needs_float(e.text) && !is_float(dtype))) {
      fail_at(scope_.source, e.span, e.text, " needs ", function_needs_float(e.text) ? "float" : "numeric", " arguments, '",
              text(args[0]), "' is ", type_word(dtype), "; cast with float(...)");
    }
    return tensor(apply_function(e.text, tensors), e.span);
  }

  const std::vector<IterDim>& space_;
  const Scope& scope_;
  Shape shape_;
};

}  // namespace

Tensor strided_read(const Tensor& tensor, const std::vector<std::vector<int64_t>>& coeff,
                    const std::vector<int64_t>& constant, const std::vector<IterDim>& space) {
  const Shape& dims = tensor.shape();
  std::vector<int64_t> stride(dims.size(), 1);
  for (size_t j = dims.size(); j-- > 1;) stride[j - 1] = checked_mul(stride[j], dims[j].value(), "stride");
  int64_t offset = 0;
  std::vector<Expr> strides(space.size(), Expr(0));
  Shape shape;
  for (const IterDim& d : space) shape.push_back(Expr(d.range.hi - d.range.lo));
  for (size_t d = 0; d < space.size(); ++d) {
    int64_t s = 0;
    for (size_t j = 0; j < dims.size(); ++j) s = checked_add(s, checked_mul(stride[j], coeff[j][d], "stride"), "stride");
    strides[d] = Expr(s);
    offset = checked_add(offset, checked_mul(s, space[d].range.lo, "offset"), "offset");
  }
  for (size_t j = 0; j < dims.size(); ++j) offset = checked_add(offset, checked_mul(stride[j], constant[j], "offset"), "offset");
  View read = View::strided(dims, shape, strides, Expr(offset));
  return Tensor(tensor.graph(), tensor.node_id(), tensor.view().then(read));
}

Tensor lower_body(const Ast& e, const std::vector<IterDim>& space, const Scope& scope) {
  return BodyLowering(space, scope).run(e);
}

}  // namespace lumen::tc
