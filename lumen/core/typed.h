// Compile-time shapes: a thin typed layer over Tensor. Where every dim is
// static, a shape mismatch is a compile error with a readable message:
//
//   auto a = typed::input<Shape<3, 4>>(g, "a");
//   auto b = typed::input<Shape<5, 2>>(g, "b");
//   auto c = typed::matmul(a, b);  // error: "matmul: inner dims differ ..."
//
// `Dyn` marks a dynamic dim (named when the input is created); checks that
// involve it happen when the graph is built, as for untyped tensors.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lumen/core/error.h"
#include "lumen/core/graph.h"
#include "lumen/core/tensor.h"

namespace lumen::typed {

inline constexpr int64_t Dyn = -1;

template <int64_t... Dims>
struct Shape {
  static constexpr size_t rank = sizeof...(Dims);
  static constexpr std::array<int64_t, sizeof...(Dims)> dims{Dims...};
};

namespace detail {

template <std::array Dims, size_t... I>
Shape<Dims[I]...> shape_from(std::index_sequence<I...>);

template <std::array Dims>
using ShapeOf = decltype(shape_from<Dims>(std::make_index_sequence<Dims.size()>()));

constexpr bool dims_match(int64_t a, int64_t b) { return a == b || a == Dyn || b == Dyn; }

template <typename A, typename B>
struct Broadcast {
  static constexpr size_t rank = A::rank > B::rank ? A::rank : B::rank;
  static constexpr int64_t dim_a(size_t i) { return i < rank - A::rank ? 1 : A::dims[i - (rank - A::rank)]; }
  static constexpr int64_t dim_b(size_t i) { return i < rank - B::rank ? 1 : B::dims[i - (rank - B::rank)]; }
  static constexpr bool ok = [] {
    for (size_t i = 0; i < rank; ++i) {
      if (!(dims_match(dim_a(i), dim_b(i)) || dim_a(i) == 1 || dim_b(i) == 1)) return false;
    }
    return true;
  }();
  static constexpr std::array<int64_t, rank> dims = [] {
    std::array<int64_t, rank> out{};
    for (size_t i = 0; i < rank; ++i) out[i] = dim_a(i) == 1 ? dim_b(i) : dim_a(i);
    return out;
  }();
  using type = ShapeOf<dims>;
};

template <typename S, size_t Axis>
struct WithoutAxis {
  static constexpr std::array<int64_t, S::rank - 1> dims = [] {
    std::array<int64_t, S::rank - 1> out{};
    for (size_t i = 0, j = 0; i < S::rank; ++i) {
      if (i != Axis) out[j++] = S::dims[i];
    }
    return out;
  }();
  using type = ShapeOf<dims>;
};

template <typename S>
constexpr int64_t static_numel() {
  int64_t n = 1;
  for (int64_t d : S::dims) {
    if (d == Dyn) return Dyn;
    n *= d;
  }
  return n;
}

}  // namespace detail

template <typename S>
class Tensor {
 public:
  using shape_type = S;

  // Wraps an untyped tensor, checking at run time that its static dims agree.
  explicit Tensor(lumen::Tensor t) : t_(std::move(t)) {
    bool ok = t_.rank() == S::rank;
    for (size_t d = 0; ok && d < S::rank; ++d) {
      ok = S::dims[d] == Dyn || t_.shape()[d].is_const(S::dims[d]);
    }
    if (!ok) fail("typed::Tensor: tensor of shape ", to_string(t_.shape()), " does not have the static shape it is typed with");
  }

  const lumen::Tensor& untyped() const { return t_; }
  operator const lumen::Tensor&() const { return t_; }  // NOLINT: typed tensors work wherever tensors do

  template <size_t Axis>
  Tensor<typename detail::WithoutAxis<S, Axis>::type> sum() const {
    static_assert(Axis < S::rank, "sum: axis is out of range for this tensor's rank");
    return Tensor<typename detail::WithoutAxis<S, Axis>::type>(t_.sum_reduce(static_cast<int>(Axis)));
  }

  template <typename NewShape>
  Tensor<NewShape> reshape() const {
    constexpr int64_t from = detail::static_numel<S>(), to = detail::static_numel<NewShape>();
    static_assert(from == Dyn || to == Dyn || from == to, "reshape: the new shape has a different number of elements");
    lumen::Shape dims;
    for (size_t d = 0; d < NewShape::rank; ++d) {
      dims.push_back(NewShape::dims[d] == Dyn ? Expr(-1) : Expr(NewShape::dims[d]));
    }
    return Tensor<NewShape>(t_.reshape(dims));
  }

  Tensor exp() const { return Tensor(t_.exp()); }

 private:
  lumen::Tensor t_;
};

// An input with a static shape; `dyn_names` names the Dyn dims in order.
template <typename S>
Tensor<S> input(Graph& g, const std::string& name, const std::vector<std::string>& dyn_names = {}, DType dtype = DType::F32) {
  lumen::Shape shape;
  size_t next = 0;
  for (int64_t d : S::dims) {
    if (d != Dyn) {
      shape.push_back(Expr(d));
      continue;
    }
    if (next >= dyn_names.size()) fail("typed::input '", name, "': give a name for every Dyn dim");
    shape.push_back(g.dim(dyn_names[next++]));
  }
  return Tensor<S>(g.input(name, shape, dtype));
}

template <typename A, typename B>
using BroadcastShape = typename detail::Broadcast<A, B>::type;

#define LUMEN_TYPED_BINARY(op, name)                                                                         \
  template <typename A, typename B>                                                                          \
  Tensor<BroadcastShape<A, B>> operator op(const Tensor<A>& a, const Tensor<B>& b) {                         \
    static_assert(detail::Broadcast<A, B>::ok,                                                               \
                  name ": shapes do not broadcast (each pair of trailing dims must be equal or 1)");         \
    return Tensor<BroadcastShape<A, B>>(a.untyped() op b.untyped());                                         \
  }

LUMEN_TYPED_BINARY(+, "add")
LUMEN_TYPED_BINARY(-, "sub")
LUMEN_TYPED_BINARY(*, "mul")
LUMEN_TYPED_BINARY(/, "div")
#undef LUMEN_TYPED_BINARY

template <int64_t M, int64_t K, int64_t K2, int64_t N>
Tensor<Shape<M, N>> matmul(const Tensor<Shape<M, K>>& a, const Tensor<Shape<K2, N>>& b) {
  static_assert(detail::dims_match(K, K2),
                "matmul: inner dims differ (a is [M, K], b is [K2, N]; a.shape[-1] must equal b.shape[-2])");
  return Tensor<Shape<M, N>>(a.untyped().matmul(b.untyped()));
}

}  // namespace lumen::typed
