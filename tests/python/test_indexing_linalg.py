"""Indexing and linear algebra against PyTorch."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import lumen
import lumen.nn.functional as F
from harness import FLOATS, Input, check, data, expect_error


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(backend, dim):
    x = Input(data((4, 5, 6), seed=1), layout="permuted")
    shape = [4, 5, 6]
    shape[dim] = 3
    idx = np.random.default_rng(2).integers(0, [4, 5, 6][dim], size=shape).astype(np.int32)
    check("gather", lambda t, i: lumen.gather(t, dim, i), lambda t, i: torch.gather(t, dim, i.long()), [x, idx], backend)


def test_gather_smaller_index(backend):
    x = data((4, 5), seed=3)
    idx = np.array([[0, 4], [3, 3]], dtype=np.int32)
    check("gather", lambda t, i: t.gather(1, i), lambda t, i: torch.gather(t, 1, i.long()), [x, idx], backend)


def test_take_along_dim_index_select_embedding_one_hot(backend):
    x = data((4, 6), seed=4)
    order = np.argsort(x, axis=1).astype(np.int32)
    check("take_along_dim", lambda t, i: lumen.take_along_dim(t, i, 1), lambda t, i: torch.take_along_dim(t, i.long(), 1), [x, order], backend)
    sel = np.array([3, 0, 0, 5], dtype=np.int32)
    check("index_select", lambda t, i: lumen.index_select(t, 1, i), lambda t, i: torch.index_select(t, 1, i.long()), [x, sel], backend)
    check("index_select", lambda t, i: t.index_select(0, i), lambda t, i: t.index_select(0, i.long()), [x, sel % 4], backend)
    w = data((10, 8), seed=5)
    ids = np.array([[1, 9, 0], [4, 4, 2]], dtype=np.int32)
    check("embedding", lambda i, t: F.embedding(i, t), lambda i, t: TF.embedding(i.long(), t), [ids, w], backend)
    check("one_hot", lambda i: F.one_hot(i, 10), lambda i: TF.one_hot(i.long(), 10).int(), [ids], backend)


def test_index_out_of_range_is_an_error(backend):
    g = lumen.Graph()
    x, i = g.input("x", (4, 5)), g.input("i", (2, 5), lumen.int32)
    p = lumen.compile(g, [lumen.gather(x, 0, i)], backend=backend)
    p.set("x", np.zeros((4, 5), np.float32))
    p.set("i", np.full((2, 5), 4, np.int32))
    expect_error(p.run, "gather", "out of range")
    p.set("i", np.full((2, 5), -1, np.int32))
    expect_error(p.run, "gather", "out of range")


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((7,), (7,)), ((7,), (7, 3)), ((2, 3), (3,)),
                                    ((2, 1, 3, 4), (5, 4, 6)), ((33, 64), (64, 1)), ((1, 1000), (1000, 7))], ids=str)
def test_matmul(backend, shapes):
    a, b = data(shapes[0], seed=6), data(shapes[1], seed=7)
    check("matmul", lambda x, y: x @ y, torch.matmul, [a, b], backend, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", FLOATS + [lumen.int32], ids=lambda d: d.name)
def test_matmul_dtypes_and_layouts(backend, dtype):
    a = Input(data((5, 7), dtype, 8), dtype, layout="permuted")
    b = Input(data((7, 3), dtype, 9), dtype, layout="sliced")
    rtol = {lumen.float16: 1e-2, lumen.bfloat16: 5e-2}.get(dtype)
    check("matmul", lambda x, y: lumen.matmul(x, y), torch.matmul, [a, b], backend, rtol=rtol, atol=rtol)


def test_bmm_linear_outer(backend):
    a, b = data((3, 4, 5), seed=10), data((3, 5, 2), seed=11)
    check("bmm", lumen.bmm, torch.bmm, [a, b], backend)
    x, w, bias = data((2, 3, 5), seed=12), data((4, 5), seed=13), data((4,), seed=14)
    check("linear", F.linear, TF.linear, [x, w, bias], backend)
    check("linear", lambda p, q: F.linear(p, q), lambda p, q: TF.linear(p, q), [x, w], backend)
    check("outer", lumen.outer, torch.outer, [data((4,), seed=15), data((6,), seed=16)], backend)


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,i->", [(7,), (7,)]),
    ("ij->ji", [(3, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij,kj->ik", [(3, 6), (2, 6)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ijk->", [(2, 3, 4)]),
    # two operands as one batched matrix product (lumen/ops/linalg.cpp contract_pair)
    ("ikl,lkj->ij", [(3, 4, 5), (5, 4, 6)]),
    ("bij,jk->kbi", [(2, 3, 4), (4, 5)]),
    ("ij,jkl->il", [(3, 4), (4, 2, 5)]),
    ("bij,bjk->bik", [(1, 3, 4), (2, 4, 5)]),
    ("abcd,cdeb->ae", [(2, 3, 4, 5), (4, 5, 6, 3)]),
])
def test_einsum(backend, eq, shapes):
    arrays = [data(s, seed=20 + k) for k, s in enumerate(shapes)]
    check("einsum", lambda *t: lumen.einsum(eq, *t), lambda *t: torch.einsum(eq, *t), arrays, backend, atol=1e-5)


def test_linalg_errors():
    g = lumen.Graph()
    a, b = g.input("a", (3, 4)), g.input("b", (5, 2))
    expect_error(lambda: a @ b, "matmul: inner dims differ", "[3, 4]", "[5, 2]")
    expect_error(lambda: lumen.bmm(a, b), "bmm", "3-D")
    expect_error(lambda: lumen.einsum("ij,jk->ik", a, b), "einsum", "label 'j'")
    expect_error(lambda: lumen.einsum("ij->ik", a), "einsum", "'k'")
    expect_error(lambda: lumen.gather(a, 0, g.input("i", (3,), lumen.int32)), "gather", "rank")
    expect_error(lambda: lumen.index_select(a, 0, g.input("f", (2,))), "index_select", "integers")


@pytest.mark.parametrize("m,k,n", [(67, 129, 192), (5, 1000, 128)], ids=str)
def test_linear_weight_input_and_transposed_a(backend, m, k, n):
    """Big enough that the CPU heuristic packs B: linear's weight given as an input is B read through a
    transpose (contiguous along k, its pack copies vectors along k), and Aᵀ·B reads A down its columns;
    odd M and K."""
    x, w, a_t = data((m, k), seed=21), data((n, k), seed=22), data((k, m), seed=23)
    check("linear", lambda p, q: F.linear(p, q), lambda p, q: TF.linear(p, q), [x, w], backend, rtol=1e-5, atol=1e-4)
    check("matmul", lambda p, q: p.transpose(0, 1) @ q, lambda p, q: p.t() @ q, [a_t, data((k, n), seed=24)],
          backend, rtol=1e-5, atol=1e-4)
