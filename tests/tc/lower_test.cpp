// Comprehensions against the built-in ops they restate, on the interpreter
// and the compiled CPU backend; and the graphs they build (views and
// primitives only, the same nodes as the built-in matmul).
#include "lumen/ops/conv.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/movement.h"
#include "lumen/ops/normalization.h"
#include "lumen/ops/reduce.h"
#include "tests/tc/tc_test_util.h"

namespace lumen::tc::testing {
namespace {

const Backend kBackends[] = {Backend::Interp, Backend::Cpu};

void expect_same(const std::string& source, const std::vector<TcInput>& inputs, const std::vector<Arg>& scalars,
                 const BuildFn& builtin, double tol = 1e-4) {
  for (Backend b : kBackends) {
    SCOPED_TRACE(backend_name(b));
    std::vector<Array> got = run_tc(source, inputs, scalars, b);
    std::vector<Array> want = run_graph(inputs, builtin, Backend::Interp);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], tol);
  }
}

TEST(TcLower, MatmulMatchesBuiltin) {
  expect_same("def matmul(float(M,K) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k) * B(k,n) }",
              {{"A", DType::F32, {7, 33}}, {"B", DType::F32, {33, 5}}}, {},
              [](const std::vector<Tensor>& t) { return std::vector<Tensor>{t[0].matmul(t[1])}; });
}

// The comprehension builds exactly the nodes (ops, shapes, views) the
// built-in matmul does, so it compiles to the same kernels.
TEST(TcLower, MatmulBuildsTheBuiltinGraph) {
  Graph a, b;
  Tensor x = a.input("A", {Expr(6), Expr(10)}), y = a.input("B", {Expr(10), Expr(4)});
  a.mark_output(define("def mm(float(M,K) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k) * B(k,n) }")({x, y})[0]);
  Tensor p = b.input("A", {Expr(6), Expr(10)}), q = b.input("B", {Expr(10), Expr(4)});
  b.mark_output(p.matmul(q));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const Node& m = a.node(static_cast<NodeId>(i));
    const Node& n = b.node(static_cast<NodeId>(i));
    EXPECT_EQ(m.op, n.op) << i;
    EXPECT_EQ(m.shape, n.shape) << i;
    ASSERT_EQ(m.inputs.size(), n.inputs.size());
    for (size_t k = 0; k < m.inputs.size(); ++k) EXPECT_EQ(m.inputs[k].view.index().index, n.inputs[k].view.index().index) << i;
  }
}

// The contraction a graph's SumReduce nodes compute: [input shape without
// size-1 dims, reduced extent] of each, in graph order.
std::vector<std::pair<Shape, Expr>> contractions(const Graph& g) {
  std::vector<std::pair<Shape, Expr>> out;
  for (const Node& n : g.nodes()) {
    if (n.op != Op::SumReduce || g.node(n.inputs[0].node).op != Op::Mul) continue;
    Shape s;
    for (const Expr& d : n.inputs[0].view.shape()) {
      if (!d.is_const(1)) s.push_back(d);
    }
    out.emplace_back(s, n.inputs[0].view.shape()[static_cast<size_t>(n.axis)]);
  }
  return out;
}

// A conv comprehension sums one flattened axis K = C·KH·KW of a
// [positions, out channels, K] product, as the built-in conv2d's channels
// form does (64 output channels: the SIMD dim), not three nested sums.
TEST(TcLower, Conv2dBuildsTheBuiltinContraction) {
  Graph a, b;
  Shape in{Expr(1), Expr(8), Expr(10), Expr(12)}, w{Expr(64), Expr(8), Expr(3), Expr(3)};
  a.mark_output(define("def conv(float(N,C,H,W) I, float(O,C,KH,KW) Wt) -> (Out) {"
                       " Out(n,o,h,w) +=! I(n, c, h + kh, w + kw) * Wt(o,c,kh,kw) }")({a.input("I", in), a.input("W", w)})[0]);
  b.mark_output(ops::conv2d(b.input("I", in), b.input("W", w), std::nullopt, {1, 1}, {0, 0}, {1, 1}));
  auto got = contractions(a), want = contractions(b);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(got[0].first, (Shape{Expr(8 * 10), Expr(64), Expr(8 * 3 * 3)}));
  EXPECT_EQ(got[0].first, want[0].first);
  EXPECT_EQ(got[0].second, want[0].second);
}

// Short windows (pooling, a depthwise conv) reduce one window axis at a time,
// each placed before the output's last dim, as the built-in pools do: the
// last dim stays the SIMD dim and each window step is written out inline,
// not one merged loop of KH·KW steps on the innermost axis.
TEST(TcLower, WindowsReduceBeforeTheLastDim) {
  Graph g;
  g.mark_output(define("def mp(float(N,C,H,W) X) -> (Y) { Y(n,c,h,w) max=! X(n, c, 2*h + kh, 2*w + kw) "
                       "where kh in 0:2, kw in 0:2 }")({g.input("X", {Expr(2), Expr(3), Expr(8), Expr(10)})})[0]);
  int reductions = 0;
  for (const Node& n : g.nodes()) {
    if (n.op != Op::MaxReduce) continue;
    ++reductions;
    const Shape& in = n.inputs[0].view.shape();
    EXPECT_TRUE(in[static_cast<size_t>(n.axis)].is_const(2));
    EXPECT_LT(static_cast<size_t>(n.axis), in.size() - 1) << "the window axis must not be the innermost";
    EXPECT_TRUE(in.back().is_const(5));
  }
  EXPECT_EQ(reductions, 2);
}

TEST(TcLower, Conv2dStridedDilatedMatchesBuiltin) {
  const char* src = R"(
    def conv(float(N,C,H,W) I, float(O,C,KH,KW) Wt, int sh, int sw, int dh, int dw) -> (Out) {
      Out(n,o,h,w) +=! I(n, c, h*sh + kh*dh, w*sw + kw*dw) * Wt(o,c,kh,kw)
    })";
  expect_same(src, {{"I", DType::F32, {2, 3, 11, 10}}, {"Wt", DType::F32, {4, 3, 3, 2}}}, {2.0, 1.0, 2.0, 3.0},
              [](const std::vector<Tensor>& t) {
                return std::vector<Tensor>{ops::conv2d(t[0], t[1], std::nullopt, {2, 1}, {0, 0}, {2, 3})};
              });
}

TEST(TcLower, DepthwiseConvMatchesBuiltin) {
  const char* src = "def dw(float(N,C,H,W) I, float(C,KH,KW) Wt) -> (O) { O(n,c,h,w) +=! I(n,c,h+kh,w+kw) * Wt(c,kh,kw) }";
  expect_same(src, {{"I", DType::F32, {1, 5, 8, 7}}, {"Wt", DType::F32, {5, 3, 3}}}, {}, [](const std::vector<Tensor>& t) {
    return std::vector<Tensor>{ops::conv2d(t[0], t[1].unsqueeze(1), std::nullopt, {1, 1}, {0, 0}, {1, 1}, 5)};
  });
}

TEST(TcLower, PoolingMatchesBuiltin) {
  const char* src = R"(
    def pools(float(N,C,H,W) X, int K, int S) -> (Mx, Avg) {
      Mx(n,c,h,w) max=! X(n, c, h*S + kh, w*S + kw) where kh in 0:K, kw in 0:K
      Sum(n,c,h,w) +=! X(n, c, h*S + kh, w*S + kw) where kh in 0:K, kw in 0:K
      Avg(n,c,h,w) = Sum(n,c,h,w) / (K*K)
    })";
  expect_same(src, {{"X", DType::F32, {2, 3, 9, 8}}}, {3.0, 2.0}, [](const std::vector<Tensor>& t) {
    return std::vector<Tensor>{ops::max_pool2d(t[0], {3, 3}, {2, 2}), ops::avg_pool2d(t[0], {3, 3}, {2, 2})};
  });
}

TEST(TcLower, SoftmaxAndMinMatchBuiltin) {
  const char* src = R"(
    def softmax(float(N,C) X) -> (Y, Lo) {
      Mx(n) max=! X(n,c)
      E(n,c) = exp(X(n,c) - Mx(n))
      S(n) +=! E(n,c)
      Y(n,c) = E(n,c) / S(n)
      Lo(n) min=! X(n,c)
    })";
  expect_same(src, {{"X", DType::F32, {5, 33}}}, {}, [](const std::vector<Tensor>& t) {
    return std::vector<Tensor>{ops::softmax(t[0], -1), ops::amin(t[0], {1})};
  });
}

TEST(TcLower, GroupNormMatchesBuiltin) {
  const char* src = R"(
    def group_norm(float(N,C,H,W) X, int G, float eps) -> (Y) {
      S(n,g) +=! X(n, g*(C/G) + c, h, w) where c in 0:C/G
      Mu(n,g) = S(n,g) / (C/G*H*W)
      V(n,g) +=! (X(n, g*(C/G) + c, h, w) - Mu(n,g)) * (X(n, g*(C/G) + c, h, w) - Mu(n,g)) where c in 0:C/G
      Y(n,k,h,w) = (X(n,k,h,w) - Mu(n, k/(C/G))) * rsqrt(V(n, k/(C/G)) / (C/G*H*W) + eps)
    })";
  expect_same(src, {{"X", DType::F32, {2, 6, 4, 5}}}, {3.0, 1e-5}, [](const std::vector<Tensor>& t) {
    return std::vector<Tensor>{ops::group_norm(t[0], 3, std::nullopt, std::nullopt, 1e-5)};
  });
}

TEST(TcLower, ProductIsExact) {
  // Products of small integers are exact in f32; a log/exp product would not be.
  const char* src = "def p(float(N,K) A) -> (P) { P(n) *=! float(int(A(n,k) * 2.0) + 5) }";
  std::vector<Array> want = run_graph({{"A", DType::F32, {4, 7}}}, [](const std::vector<Tensor>& t) {
    Tensor ints = ((t[0] * 2.0).cast(DType::I32) + t[0].graph()->constant(5, DType::I32)).cast(DType::F32);
    Tensor p = ints.slice(1, 0, 1).squeeze(1);
    for (int k = 1; k < 7; ++k) p = p * ints.slice(1, k, k + 1).squeeze(1);
    return std::vector<Tensor>{p};
  }, Backend::Interp);
  bool some_large = false;
  for (int64_t i = 0; i < want[0].numel(); ++i) some_large = some_large || std::fabs(want[0].get(i)) > 1e5;
  EXPECT_TRUE(some_large);
  for (Backend b : kBackends) expect_close(run_tc(src, {{"A", DType::F32, {4, 7}}}, {}, b)[0], want[0], 0);
}

TEST(TcLower, AccumulatingFormsAddToThePreviousValue) {
  const char* src = R"(
    def acc(float(N,K) A, float(N) B) -> (C, D) {
      C(n) = B(n)
      C(n) += A(n,k)
      D(n) = B(n)
      D(n) max= A(n,k)
    })";
  expect_same(src, {{"A", DType::F32, {3, 4}}, {"B", DType::F32, {3}}}, {}, [](const std::vector<Tensor>& t) {
    return std::vector<Tensor>{t[1] + t[0].sum_reduce(1), ops::maximum(t[1], t[0].max_reduce(1))};
  });
}

TEST(TcLower, IntTensorsAndGatherForDataDependentIndices) {
  // An embedding: the row index is read from an int tensor (a Gather); the
  // int sum stays int.
  const char* src = R"(
    def embed(int(T) Ids, float(V,D) E, int(V) Counts) -> (Out, Total) {
      Out(t,d) = E(Ids(t), d)
      Total() +=! Counts(v)
    })";
  for (Backend b : kBackends) {
    std::vector<Array> got = run_graph({{"E", DType::F32, {6, 4}}, {"Counts", DType::I32, {6}}}, [&](const std::vector<Tensor>& t) {
      Tensor ids = t[0].graph()->iota(Expr(5) - loop_index({Expr(3)}, 0), {Expr(3)}, DType::I32);  // 5, 4, 3
      return define(src)({ids, t[0], t[1]});
    }, b);
    std::vector<Array> want = run_graph({{"E", DType::F32, {6, 4}}, {"Counts", DType::I32, {6}}}, [&](const std::vector<Tensor>& t) {
      return std::vector<Tensor>{t[0].slice(0, Expr(3), Expr(6)).flip(0), t[1].sum_reduce(0)};
    }, Backend::Interp);
    expect_close(got[0], want[0], 0);
    expect_close(got[1], want[1], 0);
  }
}

// Gather nodes in the graph `src` lowers to, its one input `A` of `shape`.
int gathers(const char* src, const Shape& shape) {
  Graph g;
  define(src)({g.input("A", shape)});
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == Op::Gather;
  return n;
}

TEST(TcLower, DividedIndicesAreRepeatedViews) {
  // i / 2 and (i + 1) / 2 read A with each element repeated in place: views, no Gather.
  const char* src = "def up(float(N) A) -> (B, C) { B(i) = A(i / 2) where i in 0:2*N\n C(i) = A((i + 1) / 2) where i in 0:2*N-1 }";
  EXPECT_EQ(gathers(src, {Expr(5)}), 0);
  expect_same(src, {{"A", DType::F32, {5}}}, {}, [](const std::vector<Tensor>& t) {
    Tensor twice = t[0].unsqueeze(1).expand({Expr(5), Expr(2)}).reshape({Expr(10)});
    return std::vector<Tensor>{twice, twice.slice(0, Expr(1), Expr(10))};
  }, 0);
  // A group's statistic read per channel (group norm): Var(n, k / (C/4)).
  const char* per_channel = "def pc(float(N,G) V, float(N,C) X) -> (Y) { Y(n,k) = X(n,k) * V(n, k / (C/4)) }";
  expect_same(per_channel, {{"V", DType::F32, {2, 4}}, {"X", DType::F32, {2, 12}}}, {}, [](const std::vector<Tensor>& t) {
    Tensor v = t[0].unsqueeze(2).expand({Expr(2), Expr(4), Expr(3)}).reshape({Expr(2), Expr(12)});
    return std::vector<Tensor>{t[1] * v};
  });
}

TEST(TcLower, ComputedIndicesGather) {
  // i * i is not affine: the read is a Gather of computed positions.
  const char* src = "def sq(float(N) A) -> (B) { B(i) = A(i * i) where i in 0:3 }";
  EXPECT_GE(gathers(src, {Expr(9)}), 1);
  expect_same(src, {{"A", DType::F32, {9}}}, {}, [](const std::vector<Tensor>& t) {
    return std::vector<Tensor>{ops::concat({t[0].slice(0, Expr(0), Expr(1)), t[0].slice(0, Expr(1), Expr(2)),
                                            t[0].slice(0, Expr(4), Expr(5))}, 0)};
  }, 0);
}

TEST(TcLower, SelectComparisonsAndIndexValues) {
  const char* src = R"(
    def tri(float(N,N) A) -> (L, Eye) {
      L(i,j) = j <= i ? A(i,j) : 0.0
      Eye(i,j) = select(i == j, 1.0, 0.0) + float(i) * 0.0 where i in 0:N, j in 0:N
    })";
  expect_same(src, {{"A", DType::F32, {5, 5}}}, {}, [](const std::vector<Tensor>& t) {
    Tensor mask = t[0].graph()->iota(le(loop_index({Expr(5), Expr(5)}, 1), loop_index({Expr(5), Expr(5)}, 0)), {Expr(5), Expr(5)},
                                     DType::Bool);
    Tensor eye = t[0].graph()->iota(eq(loop_index({Expr(5), Expr(5)}, 1), loop_index({Expr(5), Expr(5)}, 0)), {Expr(5), Expr(5)},
                                    DType::F32);
    return std::vector<Tensor>{t[0] * mask.cast(DType::F32), eye};
  });
}

}  // namespace
}  // namespace lumen::tc::testing

namespace lumen::tc::testing {
namespace {

// O(i,j) +=! A(i,k) * B(k,l) * C(l,j) is summed in two steps (k, then l):
// two reductions over 3-D spaces, never the 4-D i*j*k*l space.
TEST(TcLower, ThreeOperandContractionIsContractedInSteps) {
  const char* src = "def c3(float(I,K) A, float(K,L) B, float(L,J) C) -> (O) { O(i,j) +=! A(i,k) * B(k,l) * C(l,j) }";
  Graph g;
  Tensor a = g.input("A", {Expr(5), Expr(6)}), b = g.input("B", {Expr(6), Expr(7)}), c = g.input("C", {Expr(7), Expr(3)});
  Tensor o = define(src)({a, b, c})[0];
  int sums = 0;
  for (const Node& n : g.nodes()) {
    EXPECT_LE(n.shape.size(), 3u);
    for (const Edge& e : n.inputs) EXPECT_LE(e.view.rank(), 3u);
    sums += n.op == Op::SumReduce;
  }
  EXPECT_EQ(sums, 2);
  expect_same(src, {{"A", DType::F32, {5, 6}}, {"B", DType::F32, {6, 7}}, {"C", DType::F32, {7, 3}}}, {},
              [](const std::vector<Tensor>& t) { return std::vector<Tensor>{t[0].matmul(t[1]).matmul(t[2])}; });
}

// Steps keep the whole statement's ranges: l starts at 1 here.
TEST(TcLower, ContractionStepsKeepOffsetRanges) {
  const char* src = "def c(float(I,K) A, float(K,L) B, float(L2,J) C) -> (O) { O(i,j) +=! A(i,k) * B(k,l) * C(l - 1,j) where l in 1:4 }";
  expect_same(src, {{"A", DType::F32, {4, 5}}, {"B", DType::F32, {5, 4}}, {"C", DType::F32, {3, 2}}}, {},
              [](const std::vector<Tensor>& t) {
                return std::vector<Tensor>{t[0].matmul(t[1].slice(1, Expr(1), Expr(4))).matmul(t[2])};
              });
}

}  // namespace
}  // namespace lumen::tc::testing

namespace lumen::tc::testing {
namespace {

// A typed output's declared sizes bound its statements' indices, so an
// initialisation needs no where clause; a rank-0 output and a constant body work.
TEST(TcLower, TypedOutputsBoundTheirIndices) {
  const char* src = R"(
    def init(float(M,N) A) -> (float(M,N) C, float() Total) {
      C(i,j) = 1.5
      C(i,j) += A(i,j)
      Total() +=! A(i,j)
    })";
  expect_same(src, {{"A", DType::F32, {3, 4}}}, {}, [](const std::vector<Tensor>& t) {
    return std::vector<Tensor>{t[0] + 1.5, t[0].sum_reduce(1).sum_reduce(0)};
  });
}

}  // namespace
}  // namespace lumen::tc::testing

namespace lumen::tc::testing {
namespace {

// `where h < 2` narrows h's inferred 0:3; `where k in 1:3` replaces k's 0:4.
TEST(TcLower, WhereNarrowsAndReplacesRanges) {
  const char* src = "def w(float(M,K) A) -> (C) { C(h) +=! A(h,k) where h < 2, k in 1:3 }";
  expect_same(src, {{"A", DType::F32, {3, 4}}}, {}, [](const std::vector<Tensor>& t) {
    return std::vector<Tensor>{t[0].slice(0, Expr(0), Expr(2)).slice(1, Expr(1), Expr(3)).sum_reduce(1)};
  });
}

}  // namespace
}  // namespace lumen::tc::testing
