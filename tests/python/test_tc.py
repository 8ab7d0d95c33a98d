"""Tensor comprehensions (lumen.tc) against PyTorch / einsum on every backend:
the standard layers, three research layers, and the errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lumen
from harness import Input, compare, data, expect_error, run, to_torch


def check(name, fn, torch_fn, inputs, backend, rtol=None, atol=None):
    """harness.check without the op-coverage record (comprehensions are no registry ops)."""
    inputs = [x if isinstance(x, Input) else Input(x) for x in inputs]
    got, tensors = run(fn, inputs, backend)
    expected = torch_fn(*[to_torch(x.array, x.dtype) for x in inputs])
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    assert len(got) == len(expected), f"{name}: {len(got)} outputs, torch gives {len(expected)}"
    for g_out, t_out, t in zip(got, expected, tensors):
        compare(name, g_out, t_out, t.dtype, rtol, atol)

MATMUL = "def matmul(float(M,K) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k) * B(k,n) }"
BMM = "def bmm(float(B,M,K) X, float(B,K,N) Y) -> (Z) { Z(b,m,n) +=! X(b,m,k) * Y(b,k,n) }"
CONV = """
def conv2d(float(N,C,H,W) I, float(O,C,KH,KW) Wt, float(O) Bias, int sh, int sw, int dh, int dw) -> (Out) {
  Out(n,o,h,w) +=! I(n, c, h*sh + kh*dh, w*sw + kw*dw) * Wt(o,c,kh,kw)
  Out(n,o,h,w) += Bias(o)
}"""
DEPTHWISE = """
def depthwise(float(N,C,H,W) I, float(C,KH,KW) Wt, int s) -> (Out) {
  Out(n,c,h,w) +=! I(n, c, h*s + kh, w*s + kw) * Wt(c,kh,kw)
}"""
POOL = """
def pool(float(N,C,H,W) X, int K, int S) -> (Max, Avg) {
  Max(n,c,h,w) max=! X(n, c, h*S + kh, w*S + kw) where kh in 0:K, kw in 0:K
  Avg(n,c,h,w) +=! X(n, c, h*S + kh, w*S + kw) / (K*K) where kh in 0:K, kw in 0:K
}"""
TENSORDOT = "def tensordot(float(I,K,L) A, float(L,K,J) B) -> (C) { C(i,j) +=! A(i,k,l) * B(l,k,j) }"
GROUP_NORM = """
def group_norm(float(N,C,H,W) X, float(C) Gamma, float(C) Beta, int G, float eps) -> (Y) {
  Mean(n,g) +=! X(n, g*(C/G) + c, h, w) / (C/G*H*W) where c in 0:C/G
  Var(n,g) +=! (X(n, g*(C/G) + c, h, w) - Mean(n,g)) * (X(n, g*(C/G) + c, h, w) - Mean(n,g)) / (C/G*H*W)
      where c in 0:C/G
  Y(n,k,h,w) = (X(n,k,h,w) - Mean(n, k/(C/G))) * rsqrt(Var(n, k/(C/G)) + eps) * Gamma(k) + Beta(k)
}"""
SOFTMAX = """
def softmax(float(N,C) X) -> (Y) {
  Mx(n) max=! X(n,c)
  E(n,c) = exp(X(n,c) - Mx(n))
  S(n) +=! E(n,c)
  Y(n,c) = E(n,c) / S(n)
}"""
# Research layers (not PyTorch ops).
CONTRACT3 = "def contract3(float(I,K) A, float(K,L) B, float(L,J) C) -> (O) { O(i,j) +=! A(i,k) * B(k,l) * C(l,j) }"
KRONECKER = """
def kron_linear(float(N,P,Q) X, float(R,P) A, float(S,Q) B) -> (Y) {
  T(n,p,s) +=! X(n,p,q) * B(s,q)
  Y(n,r,s) +=! A(r,p) * T(n,p,s)
}"""
BLOCK_SCALED = """
def block_scaled_matmul(float(M,K) X, int(K,N) Wq, float(G,N) Scale) -> (Y) {
  Y(m,n) +=! X(m, g*(K/G) + j) * float(Wq(g*(K/G) + j, n)) * Scale(g,n) where j in 0:K/G
}"""


def test_matmul_and_bmm(backend):
    mm = lumen.tc(MATMUL)
    check("tc_matmul", lambda a, b: mm(a, b), torch.matmul, [data((7, 33), seed=1), data((33, 5), seed=2)], backend)
    check("tc_matmul", lambda a, b: mm(a, b), torch.matmul,
          [Input(data((4, 9), seed=3), layout="permuted"), Input(data((9, 1), seed=4), layout="sliced")], backend)
    bmm = lumen.tc(BMM)
    check("tc_bmm", lambda x, y: bmm(x, y), torch.bmm, [data((3, 5, 7), seed=5), data((3, 7, 4), seed=6)], backend)


@pytest.mark.parametrize("stride,dilation", [((1, 1), (1, 1)), ((2, 1), (1, 1)), ((1, 2), (2, 3))], ids=str)
def test_conv2d(backend, stride, dilation):
    conv = lumen.tc(CONV)
    args = (stride[0], stride[1], dilation[0], dilation[1])
    check("tc_conv2d", lambda i, w, b: conv(i, w, b, *args),
          lambda i, w, b: F.conv2d(i, w, b, stride=stride, dilation=dilation),
          [data((2, 3, 11, 10), seed=1), data((4, 3, 3, 2), seed=2), data((4,), seed=3)], backend, rtol=1e-4, atol=1e-4)


def test_depthwise_conv(backend):
    dw = lumen.tc(DEPTHWISE)
    check("tc_depthwise", lambda i, w: dw(i, w, np.int64(2)), lambda i, w: F.conv2d(i, w.unsqueeze(1), stride=2, groups=5),
          [data((2, 5, 9, 8), seed=1), data((5, 3, 3), seed=2)], backend, rtol=1e-4, atol=1e-4)


def test_pooling(backend):
    pool = lumen.tc(POOL)
    check("tc_pool", lambda x: pool(x, 3, 2), lambda x: (F.max_pool2d(x, 3, 2), F.avg_pool2d(x, 3, 2)),
          [data((2, 3, 9, 8), seed=1)], backend)


def test_tensordot(backend):
    td = lumen.tc(TENSORDOT)
    check("tc_tensordot", lambda a, b: td(a, b), lambda a, b: torch.tensordot(a, b, dims=([1, 2], [1, 0])),
          [data((6, 4, 5), seed=1), data((5, 4, 7), seed=2)], backend, rtol=1e-4, atol=1e-4)


def test_group_norm(backend):
    gn = lumen.tc(GROUP_NORM)
    check("tc_group_norm", lambda x, g, b: gn(x, g, b, 3, 1e-5), lambda x, g, b: F.group_norm(x, 3, g, b, eps=1e-5),
          [data((2, 6, 5, 7), seed=1), data((6,), seed=2), data((6,), seed=3)], backend, rtol=1e-4, atol=1e-4)


def test_softmax(backend):
    sm = lumen.tc(SOFTMAX)
    check("tc_softmax", lambda x: sm(x), lambda x: torch.softmax(x, -1), [data((5, 33), seed=1)], backend)


def test_three_operand_contraction(backend):
    c3 = lumen.tc(CONTRACT3)
    check("tc_contract3", lambda a, b, c: c3(a, b, c), lambda a, b, c: torch.einsum("ik,kl,lj->ij", a, b, c),
          [data((5, 6), seed=1), data((6, 7), seed=2), data((7, 3), seed=3)], backend, rtol=1e-4, atol=1e-4)


def test_kronecker_factored_linear(backend):
    kl = lumen.tc(KRONECKER)

    def reference(x, a, b):  # y = x_flat @ kron(A, B)^T, unflattened
        n, p, q = x.shape
        y = x.reshape(n, p * q) @ torch.kron(a, b).T
        return y.reshape(n, a.shape[0], b.shape[0])

    check("tc_kron_linear", lambda x, a, b: kl(x, a, b), reference,
          [data((4, 3, 5), seed=1), data((6, 3), seed=2), data((2, 5), seed=3)], backend, rtol=1e-4, atol=1e-4)


def test_block_scaled_matmul(backend):
    bs = lumen.tc(BLOCK_SCALED)

    def reference(x, wq, scale):  # int weights, one scale per (block of K, column)
        group = wq.shape[0] // scale.shape[0]
        return x @ (wq.float() * scale.repeat_interleave(group, 0))

    wq = data((12, 5), lumen.int32, seed=2, low=-8, high=7)
    check("tc_block_scaled_matmul", lambda x, w, s: bs(x, w, s), reference,
          [data((3, 12), seed=1), wq, data((4, 5), seed=3)], backend, rtol=1e-4, atol=1e-4)


def test_comprehension_mixes_with_builtin_ops(backend):
    mm = lumen.tc(MATMUL)
    check("tc_mixed", lambda a, b: lumen.relu(mm(a * 2, b)).sum(-1), lambda a, b: torch.relu((a * 2) @ b).sum(-1),
          [data((4, 6), seed=1), data((6, 3), seed=2)], backend, rtol=1e-4, atol=1e-4)


def test_object_and_errors():
    mm = lumen.tc(MATMUL)
    assert mm.name == "matmul" and mm.outputs == ["C"]
    g = lumen.Graph()
    a, b = g.input("a", (3, 4)), g.input("b", (5, 2))
    msg = expect_error(lambda: mm(a, b), "size mismatch: K is 4 from A (dim 1) but 5 from B (dim 0)")
    assert "^" in msg
    expect_error(lambda: mm(a, "x"), "argument 2 is a str")
    expect_error(lambda: lumen.tc("def f(float(N) A) -> (B) { B(i) = A(i) + }"), "line 1, column 42", "^")
    expect_error(lambda: lumen.tc("def f(float(N) A) -> (B) { B(i) = X(i) }"), "unknown tensor 'X'")


def test_tensor_valued_index_out_of_its_dim_raises(backend):
    # Column 4 of a 4-column table would land on the next row's first element in
    # the flattened table: the read must raise instead.
    pick = lumen.tc("def pick(int(T) Cols, float(V,D) E) -> (Out) { Out(r,t) = E(r, Cols(t)) }")
    g = lumen.Graph()
    cols, table = g.input("cols", (2,), lumen.int32), g.input("table", (3, 4))
    program = lumen.compile(g, [pick(cols, table)], backend=backend)
    t = np.arange(12, dtype=np.float32).reshape(3, 4)
    good = program(cols=np.array([3, 0], np.int32), table=t)
    assert np.array_equal(good, t[:, [3, 0]])
    expect_error(lambda: program(cols=np.array([4, 0], np.int32), table=t), "gather", "out of range")


def test_reads_through_padded_views(backend):
    # Comprehensions read in bounds; padding comes from the built-in op, whose
    # masked view the comprehension's strided reads compose with.
    conv = lumen.tc(CONV)
    check("tc_conv2d_padded", lambda i, w, b: conv(lumen.nn.functional.pad(i, (1, 2, 2, 1)), w, b, 1, 2, 1, 1),
          lambda i, w, b: F.conv2d(F.pad(i, (1, 2, 2, 1)), w, b, stride=(1, 2)),
          [data((1, 2, 7, 6), seed=4), data((3, 2, 3, 3), seed=5), data((3,), seed=6)], backend, rtol=1e-4, atol=1e-4)



def _kernels(build, *shapes):
    g = lumen.Graph()
    program = lumen.compile(g, [build(*[g.input(f"x{i}", s) for i, s in enumerate(shapes)])], budget_s=0,
                            tuning_cache=False)
    return program.stats["kernels"]


def test_softmax_compiles_to_the_builtin_kernels():
    """The comprehension's exact division by the row sum must not give the sum a buffer of its own: one kernel,
    as the built-in softmax (tests/tc/lower_test.cpp checks conv's contraction form)."""
    assert _kernels(lumen.tc(SOFTMAX), (64, 256)) == _kernels(lambda x: lumen.nn.functional.softmax(x, -1), (64, 256)) == 1
