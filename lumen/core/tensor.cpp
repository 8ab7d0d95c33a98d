#include "lumen/core/tensor.h"

#include <cmath>
#include <numeric>

#include "lumen/core/error.h"
#include "lumen/core/layout.h"
#include "lumen/core/simplify.h"

namespace lumen {

namespace {

const char* binary_name(Op op) {
  switch (op) {
    case Op::Add: return "add";
    case Op::Mul: return "mul";
    case Op::Mod: return "mod";
    default: return "less_than";
  }
}

void same_graph(const Tensor& a, const Tensor& b, const char* op) {
  if (!a.defined() || !b.defined()) fail(op, ": an operand is an undefined tensor");
  if (a.graph() != b.graph()) fail(op, ": operands belong to different graphs");
}

}  // namespace

DType Tensor::dtype() const { return graph_->node(node_).dtype; }

int Tensor::axis(int axis, const char* op) const {
  int r = static_cast<int>(rank());
  int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) fail(op, ": axis ", axis, " is out of range for shape ", to_string(shape()), " (rank ", r, ")");
  return a;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    Expr da = i < rank - a.size() ? Expr(1) : a[i - (rank - a.size())];
    Expr db = i < rank - b.size() ? Expr(1) : b[i - (rank - b.size())];
    if (simplify(da) == simplify(db) || db.is_const(1)) {
      out[i] = da;
    } else if (da.is_const(1)) {
      out[i] = db;
    } else {
      fail(op, ": shapes ", to_string(a), " and ", to_string(b), " do not broadcast (dim ", i, " of the result: ", da,
           " vs ", db, "; dims must be equal or 1)");
    }
  }
  return out;
}

std::pair<Tensor, Tensor> broadcast(const Tensor& a, const Tensor& b, const char* op) {
  same_graph(a, b, op);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  return {a.expand(shape), b.expand(shape)};
}

// ---- primitives -----------------------------------------------------------

Tensor Tensor::unary(Op op) const {
  if (!is_float(dtype())) {
    fail(op_name(op), ": needs a float dtype (f32, f16, bf16, f64), got ", dtype_name(dtype()), " for shape ",
         to_string(shape()), " (cast first)");
  }
  if (auto r = in_memory_order({*this}, [op](const std::vector<Tensor>& in) { return in[0].unary(op); })) return *r;
  Node n;
  n.op = op;
  n.dtype = dtype();
  n.shape = shape();
  n.inputs = {edge()};
  return graph_->tensor(graph_->add(std::move(n)));
}

Tensor Tensor::log2() const { return unary(Op::Log2); }
Tensor Tensor::exp2() const { return unary(Op::Exp2); }
Tensor Tensor::sin() const { return unary(Op::Sin); }
Tensor Tensor::sqrt() const { return unary(Op::Sqrt); }
Tensor Tensor::recip() const { return unary(Op::Recip); }

Tensor Tensor::cast(DType to) const {
  if (to == dtype()) return *this;
  if (auto r = in_memory_order({*this}, [to](const std::vector<Tensor>& in) { return in[0].cast(to); })) return *r;
  Node n;
  n.op = Op::Cast;
  n.dtype = to;
  n.shape = shape();
  n.inputs = {edge()};
  return graph_->tensor(graph_->add(std::move(n)));
}

Tensor Tensor::contiguous() const {
  if (view_.is_contiguous()) return *this;
  return buffered();
}

Tensor Tensor::buffered() const {
  Node n;
  n.op = Op::Contiguous;
  n.dtype = dtype();
  n.shape = shape();
  n.inputs = {edge()};
  return graph_->tensor(graph_->add(std::move(n)));
}

Tensor Tensor::binary(Op op, const Tensor& other) const {
  const char* name = binary_name(op);
  same_graph(*this, other, name);
  if (dtype() != other.dtype()) {
    fail(name, ": dtypes differ: a is ", dtype_name(dtype()), " ", to_string(shape()), ", b is ",
         dtype_name(other.dtype()), " ", to_string(other.shape()), " (cast one operand first)");
  }
  if (op == Op::Mod && dtype() == DType::Bool) fail("mod: not defined for bool operands (cast to i32 first)");
  auto [a, b] = broadcast(*this, other, name);
  auto in_order = [op](const std::vector<Tensor>& in) { return in[0].binary(op, in[1]); };
  if (auto r = in_memory_order({a, b}, in_order)) return *r;
  Node n;
  n.op = op;
  n.dtype = op == Op::LessThan ? DType::Bool : dtype();
  n.shape = a.shape();
  n.inputs = {a.edge(), b.edge()};
  return graph_->tensor(graph_->add(std::move(n)));
}

Tensor Tensor::add(const Tensor& other) const { return binary(Op::Add, other); }
Tensor Tensor::mul(const Tensor& other) const { return binary(Op::Mul, other); }
Tensor Tensor::mod(const Tensor& other) const { return binary(Op::Mod, other); }
Tensor Tensor::less_than(const Tensor& other) const { return binary(Op::LessThan, other); }

Tensor Tensor::reduce(Op op, int ax) const {
  const char* name = op == Op::SumReduce ? "sum_reduce" : "max_reduce";
  int a = axis(ax, name);
  if (op == Op::SumReduce && dtype() == DType::Bool) fail("sum_reduce: not defined for bool (cast to i32 first)");
  Node n;
  n.op = op;
  n.dtype = dtype();
  n.shape = shape();
  n.shape.erase(n.shape.begin() + a);
  n.axis = a;
  n.inputs = {edge()};
  return graph_->tensor(graph_->add(std::move(n)));
}

Tensor Tensor::sum_reduce(int ax) const { return reduce(Op::SumReduce, ax); }
Tensor Tensor::max_reduce(int ax) const { return reduce(Op::MaxReduce, ax); }

Tensor Tensor::gather(const Tensor& indices, int ax) const {
  same_graph(*this, indices, "gather");
  int a = axis(ax, "gather");
  if (indices.dtype() != DType::I32 && indices.dtype() != DType::I64) {
    fail("gather: indices must be i32 or i64, got ", dtype_name(indices.dtype()), " ", to_string(indices.shape()),
         " (cast integral indices with .cast(i64))");
  }
  Node n;
  n.op = Op::Gather;
  n.dtype = dtype();
  n.shape.assign(shape().begin(), shape().begin() + a);
  n.shape.insert(n.shape.end(), indices.shape().begin(), indices.shape().end());
  n.shape.insert(n.shape.end(), shape().begin() + a + 1, shape().end());
  n.axis = a;
  n.inputs = {edge(), indices.edge()};
  return graph_->tensor(graph_->add(std::move(n)));
}

// ---- movement -------------------------------------------------------------

Tensor Tensor::permute(const std::vector<int>& order) const {
  std::vector<int> normalised;
  for (int o : order) normalised.push_back(o < 0 ? o + static_cast<int>(rank()) : o);
  return with_view(view_.permute(normalised));
}

Tensor Tensor::transpose(int a, int b) const {
  std::vector<int> order(rank());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[static_cast<size_t>(axis(a, "transpose"))], order[static_cast<size_t>(axis(b, "transpose"))]);
  return permute(order);
}

Tensor Tensor::reshape(const Shape& new_shape) const {
  Shape s = new_shape;
  int infer = -1;
  Expr known = Expr(1);
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d].is_const(-1)) {
      if (infer >= 0) fail("reshape: only one dim may be -1 in ", to_string(new_shape));
      infer = static_cast<int>(d);
    } else {
      known = known * s[d];
    }
  }
  if (infer >= 0) {
    Expr numel = shape_numel(shape());
    Expr k = simplify(known);
    if (k.is_const(0) || !prove(eq(numel % k, Expr(0)))) {
      fail("reshape: cannot infer the -1 dim of ", to_string(new_shape), " from shape ", to_string(shape()));
    }
    s[static_cast<size_t>(infer)] = simplify(numel / k);
  }
  return with_view(view_.reshape(s));
}

Tensor Tensor::expand(const Shape& new_shape) const {
  if (new_shape.size() < rank()) {
    fail("expand: shape ", to_string(shape()), " cannot expand to fewer dims ", to_string(new_shape));
  }
  Tensor t = *this;
  if (new_shape.size() > rank()) {
    Shape padded(new_shape.size() - rank(), Expr(1));
    padded.insert(padded.end(), shape().begin(), shape().end());
    t = reshape(padded);
  }
  return t.with_view(t.view_.expand(new_shape));
}

Tensor Tensor::slice(int ax, Expr begin, Expr end, int64_t step) const {
  int a = axis(ax, "slice");
  Tensor out = with_view(view_.slice(a, begin, end, step));
  // Dynamic bounds are checked when the dims are bound.
  const Expr& size = shape()[static_cast<size_t>(a)];
  std::string message = "slice: range [" + lumen::to_string(begin) + ", " + lumen::to_string(end) + ") must lie within dim " +
                        std::to_string(ax) + " of shape " + lumen::to_string(shape()) + " (0 <= begin <= end <= " +
                        lumen::to_string(size) + ")";
  graph_->require(logical_and(logical_and(ge(begin, Expr(0)), le(begin, end)), le(end, size)), message);
  return out;
}

Tensor Tensor::flip(int ax) const { return with_view(view_.flip(axis(ax, "flip"))); }

Tensor Tensor::pad(const std::vector<std::pair<Expr, Expr>>& padding) const { return with_view(view_.pad(padding)); }

Tensor Tensor::unfold(int ax, int64_t size, int64_t step, int64_t dilation) const {
  return with_view(view_.unfold(axis(ax, "unfold"), size, step, dilation));
}

Tensor Tensor::unsqueeze(int ax) const {
  int r = static_cast<int>(rank());
  int a = ax < 0 ? ax + r + 1 : ax;
  if (a < 0 || a > r) fail("unsqueeze: axis ", ax, " is out of range for shape ", to_string(shape()));
  Shape s = shape();
  s.insert(s.begin() + a, Expr(1));
  return reshape(s);
}

Tensor Tensor::squeeze(int ax) const {
  int a = axis(ax, "squeeze");
  if (!shape()[static_cast<size_t>(a)].is_const(1)) {
    fail("squeeze: dim ", ax, " of shape ", to_string(shape()), " is not 1");
  }
  Shape s = shape();
  s.erase(s.begin() + a);
  return reshape(s);
}

// ---- sugar ------------------------------------------------------------------

Tensor Tensor::scalar(double value) const { return graph_->constant(value, dtype()); }

Tensor Tensor::operator-() const { return mul(scalar(-1.0)); }

Tensor Tensor::exp() const {
  static const double kLog2e = 1.4426950408889634;
  return mul(scalar(kLog2e)).exp2();
}

Tensor Tensor::sum(int ax, bool keepdim) const {
  int a = axis(ax, "sum");
  Tensor s = sum_reduce(a);
  return keepdim ? s.unsqueeze(a) : s;
}

Tensor Tensor::matmul(const Tensor& other) const {
  same_graph(*this, other, "matmul");
  if (rank() < 1 || other.rank() < 1) fail("matmul: operands must have at least 1 dim, got ", to_string(shape()), " and ", to_string(other.shape()));
  Tensor a = rank() == 1 ? unsqueeze(0) : *this;
  Tensor b = other.rank() == 1 ? other.unsqueeze(1) : other;
  const Expr& k_a = a.shape()[a.rank() - 1];
  const Expr& k_b = b.shape()[b.rank() - 2];
  if (simplify(k_a) != simplify(k_b)) {
    fail("matmul: inner dims differ: a is ", to_string(shape()), ", b is ", to_string(other.shape()),
         " (a.shape[-1] must equal b.shape[-2])");
  }
  // [..., M, K] x [..., K, N]: multiply at [..., M, N, K] and sum the last axis.
  Tensor lhs = a.unsqueeze(-2);                     // [..., M, 1, K]
  Tensor rhs = b.transpose(-1, -2).unsqueeze(-3);  // [..., 1, N, K]
  Tensor out = lhs.mul(rhs).sum_reduce(-1);        // [..., M, N]
  if (rank() == 1) out = out.squeeze(-2);
  if (other.rank() == 1) out = out.squeeze(-1);
  return out;
}

Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return a.add(-b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
// Division is multiplication by a reciprocal, so it is defined for floats only.
static void require_float_division(const Tensor& t) {
  if (!is_float(t.dtype())) {
    fail("div: operands are ", dtype_name(t.dtype()), " ", to_string(t.shape()),
         "; division is defined for float dtypes (cast first, or use floor division from lumen/ops)");
  }
}

Tensor operator/(const Tensor& a, const Tensor& b) {
  require_float_division(a);
  return a.mul(b.recip());
}
Tensor operator+(const Tensor& a, double b) { return a.add(a.scalar(b)); }
Tensor operator-(const Tensor& a, double b) { return a.add(a.scalar(-b)); }
Tensor operator*(const Tensor& a, double b) { return a.mul(a.scalar(b)); }
Tensor operator/(const Tensor& a, double b) {
  require_float_division(a);
  return a.mul(a.scalar(1.0 / b));
}
Tensor operator+(double a, const Tensor& b) { return b.scalar(a).add(b); }
Tensor operator-(double a, const Tensor& b) { return b.scalar(a).add(-b); }
Tensor operator*(double a, const Tensor& b) { return b.scalar(a).mul(b); }
Tensor operator/(double a, const Tensor& b) {
  require_float_division(b);
  return b.scalar(a).mul(b.recip());
}

}  // namespace lumen
