// Tensor — a cheap handle to a value in a Graph: a node plus the View through
// which it is seen. Calling a method records nodes; nothing runs until the
// graph is compiled. Movement methods only change the View.
//
// The Graph must outlive its Tensors.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lumen/core/graph.h"

namespace lumen {

class Tensor {
 public:
  Tensor() = default;
  Tensor(Graph* graph, NodeId node, View view) : graph_(graph), node_(node), view_(std::move(view)) {}

  bool defined() const { return graph_ != nullptr; }
  Graph* graph() const { return graph_; }
  NodeId node_id() const { return node_; }
  const View& view() const { return view_; }
  Edge edge() const { return Edge{node_, view_}; }
  DType dtype() const;
  const Shape& shape() const { return view_.shape(); }
  size_t rank() const { return view_.rank(); }
  // Normalises a possibly negative axis; throws naming `op` if out of range.
  int axis(int axis, const char* op) const;

  // ---- primitives -------------------------------------------------------
  Tensor log2() const;
  Tensor exp2() const;
  Tensor sin() const;
  Tensor sqrt() const;
  Tensor recip() const;
  Tensor cast(DType dtype) const;
  Tensor contiguous() const;
  // A Contiguous node even where the view is contiguous already: fusion gives
  // it a buffer of its own (a value computed once and read by many).
  Tensor buffered() const;
  // Binary primitives broadcast their operands (a free view) first.
  Tensor add(const Tensor& other) const;
  Tensor mul(const Tensor& other) const;
  Tensor mod(const Tensor& other) const;
  Tensor less_than(const Tensor& other) const;
  Tensor sum_reduce(int axis) const;  // removes `axis`
  Tensor max_reduce(int axis) const;
  // out[a..., j..., b...] = this[a..., indices[j...], b...] along `axis`.
  Tensor gather(const Tensor& indices, int axis = 0) const;

  // ---- movement (views, free) -------------------------------------------
  Tensor permute(const std::vector<int>& order) const;
  Tensor transpose(int a, int b) const;
  Tensor reshape(const Shape& shape) const;
  Tensor expand(const Shape& shape) const;  // size-1 dims grow; new leading dims are added
  Tensor slice(int axis, Expr begin, Expr end, int64_t step = 1) const;
  Tensor flip(int axis) const;
  Tensor pad(const std::vector<std::pair<Expr, Expr>>& padding) const;
  Tensor unfold(int axis, int64_t size, int64_t step, int64_t dilation = 1) const;
  Tensor unsqueeze(int axis) const;
  Tensor squeeze(int axis) const;

  // ---- sugar composed from primitives -----------------------------------
  Tensor operator-() const;
  Tensor exp() const;
  Tensor sum(int axis, bool keepdim = false) const;
  Tensor matmul(const Tensor& other) const;
  Tensor scalar(double value) const;  // a constant of this dtype, broadcastable

 private:
  Tensor unary(Op op) const;
  Tensor binary(Op op, const Tensor& other) const;
  Tensor reduce(Op op, int axis) const;
  Tensor with_view(View view) const { return Tensor(graph_, node_, std::move(view)); }

  Graph* graph_ = nullptr;
  NodeId node_ = -1;
  View view_;
};

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

// Numpy broadcasting of two shapes; throws naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Both tensors viewed at their common broadcast shape.
std::pair<Tensor, Tensor> broadcast(const Tensor& a, const Tensor& b, const char* op);

}  // namespace lumen
