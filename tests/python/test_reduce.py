"""Reductions, scans and the softmax family against PyTorch."""
import numpy as np
import pytest
import torch

import lumen
from harness import FLOATS, Input, check, data

DIMS = [None, 0, -1, (0, 2), (-1, 1)]


def _tdim(dim):
    return tuple(range(3)) if dim is None else dim


@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_mean_amax_amin_prod(backend, dim, keepdim):
    x = data((4, 1, 7), seed=1)
    td = _tdim(dim)
    check("sum", lambda t: lumen.sum(t, dim, keepdim), lambda t: torch.sum(t, td, keepdim), [x], backend)
    check("mean", lambda t: lumen.mean(t, dim, keepdim), lambda t: torch.mean(t, td, keepdim), [x], backend)
    check("amax", lambda t: lumen.amax(t, dim, keepdim), lambda t: torch.amax(t, td, keepdim), [x], backend)
    check("amin", lambda t: lumen.amin(t, dim, keepdim), lambda t: torch.amin(t, td, keepdim), [x], backend)
    xs = data((4, 1, 7), seed=2, low=0.5, high=1.5)
    check("prod", lambda t: lumen.prod(t, dim, keepdim), lambda t: _torch_prod(t, td, keepdim), [xs], backend)


def _torch_prod(t, dims, keepdim):
    dims = [dims] if isinstance(dims, int) else sorted((d % t.ndim for d in dims), reverse=True)
    for d in dims:
        t = torch.prod(t, d, keepdim=True)
    if not keepdim:
        for d in dims:
            t = t.squeeze(d)
    return t


@pytest.mark.parametrize("shape", [(1000,), (33, 1000), (7, 33)], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "permuted", "sliced"])
def test_large_and_non_contiguous(backend, shape, layout):
    x = Input(data(shape, seed=3), layout=layout)
    check("sum", lambda t: lumen.sum(t, -1), lambda t: torch.sum(t, -1), [x], backend, rtol=1e-5, atol=1e-4)
    check("amax", lambda t: lumen.amax(t, 0), lambda t: torch.amax(t, 0), [x], backend)
    check("mean", lambda t: lumen.mean(t), lambda t: torch.mean(t), [x], backend)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_half_precision_reductions(backend, dtype):
    x = Input(data((6, 33), dtype, 4), dtype)
    check("sum", lambda t: lumen.sum(t, 1), lambda t: torch.sum(t, 1), [x], backend, rtol=2e-2 if dtype != lumen.float32 else None, atol=5e-2 if dtype != lumen.float32 else 1e-4)
    check("mean", lambda t: lumen.mean(t, 0), lambda t: torch.mean(t, 0), [x], backend)
    check("amax", lambda t: lumen.amax(t, -1), lambda t: torch.amax(t, -1), [x], backend)
    check("softmax", lambda t: lumen.softmax(t, -1), lambda t: torch.softmax(t, -1), [x], backend)
    check("log_softmax", lambda t: lumen.log_softmax(t, 0), lambda t: torch.log_softmax(t, 0), [x], backend)
    check("var", lambda t: lumen.var(t, 1), lambda t: torch.var(t, 1), [x], backend)


def test_integer_and_bool_reductions(backend):
    i = data((5, 6), lumen.int32, 5, -100, 100)
    check("sum", lambda t: lumen.sum(t, 1), lambda t: torch.sum(t, 1), [i], backend)
    check("amax", lambda t: lumen.amax(t, 0), lambda t: torch.amax(t, 0), [i], backend)
    check("amin", lambda t: lumen.amin(t, 0), lambda t: torch.amin(t, 0), [i], backend)
    check("prod", lambda t: lumen.prod(t, 0), lambda t: torch.prod(t, 0), [data((5, 6), lumen.int32, 6, -3, 3)], backend)
    b = data((5, 6), lumen.bool_, 7)
    check("all", lambda t: lumen.all(t, 1), lambda t: torch.all(t, 1), [b], backend)
    check("any", lambda t: lumen.any(t, 0), lambda t: torch.any(t, 0), [b], backend)
    check("all", lambda t: lumen.all(t), lambda t: torch.all(t), [b], backend)
    check("any", lambda t: lumen.any(t), lambda t: torch.any(t), [data((4,), seed=8)], backend)
    check("sum", lambda t: lumen.sum(t, 0), lambda t: torch.sum(t, 0), [b], backend)


@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_std(backend, correction):
    x = data((6, 7), seed=9)
    check("var", lambda t: lumen.var(t, 1, correction=correction), lambda t: torch.var(t, 1, correction=correction), [x], backend)
    check("std", lambda t: lumen.std(t, (0, 1), correction=correction, keepdim=True),
          lambda t: torch.std(t, (0, 1), correction=correction, keepdim=True), [x], backend)
    check("var", lambda t: lumen.var(t, unbiased=False), lambda t: torch.var(t, unbiased=False), [x], backend)


def test_argmax_argmin_ties_and_nan(backend):
    x = np.array([[1, 3, 3, 0], [2, 2, 2, 2], [-1, -5, -5, 4]], dtype=np.float32)
    for d in (0, 1, -1):
        check("argmax", lambda t: lumen.argmax(t, d), lambda t: torch.argmax(t, d).to(torch.int32), [x], backend)
        check("argmin", lambda t: lumen.argmin(t, d, keepdim=True), lambda t: torch.argmin(t, d, keepdim=True).to(torch.int32), [x], backend)
    check("argmax", lambda t: lumen.argmax(t), lambda t: torch.argmax(t).to(torch.int32), [x], backend)
    n = np.array([[1, np.nan, 3, np.nan], [np.inf, 2, 2, np.inf]], dtype=np.float32)
    check("argmax", lambda t: lumen.argmax(t, 1), lambda t: torch.argmax(t, 1).to(torch.int32), [n], backend)
    check("argmin", lambda t: lumen.argmin(t, 1), lambda t: torch.argmin(t, 1).to(torch.int32), [n], backend)
    i = data((5, 7), lumen.int32, 10, -3, 3)
    check("argmax", lambda t: lumen.argmax(t, 1), lambda t: torch.argmax(t, 1).to(torch.int32), [i], backend)


def test_max_min_with_dim_return_values_and_indices(backend):
    x = data((4, 7), seed=11)
    check("amax", lambda t: tuple(lumen.max(t, 1)), lambda t: (torch.max(t, 1).values, torch.max(t, 1).indices.int()), [x], backend)
    check("amin", lambda t: tuple(lumen.min(t, 0, keepdim=True)),
          lambda t: (torch.min(t, 0, keepdim=True).values, torch.min(t, 0, keepdim=True).indices.int()), [x], backend)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logsumexp(backend, dim):
    x = data((5, 33), seed=12, low=-50, high=50)
    check("logsumexp", lambda t: lumen.logsumexp(t, dim), lambda t: torch.logsumexp(t, dim), [x], backend)
    inf = np.array([[-np.inf, -np.inf], [np.inf, 1.0], [-np.inf, 2.0]], dtype=np.float32)
    check("logsumexp", lambda t: lumen.logsumexp(t, 1), lambda t: torch.logsumexp(t, 1), [inf], backend)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_family(backend, dim):
    x = Input(data((7, 33), seed=13, low=-20, high=20), layout="permuted")
    check("softmax", lambda t: lumen.softmax(t, dim), lambda t: torch.softmax(t, dim), [x], backend)
    check("log_softmax", lambda t: lumen.log_softmax(t, dim), lambda t: torch.log_softmax(t, dim), [x], backend)


@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_big_enough_for_reduction_parts(backend, dim):
    """Column reductions of at least 2^18 loads are cut into rfactor parts; softmax down the columns reads its sum
    through a reshape ([640] -> [1, 640]) epilogue, which once lowered the parts with the wrong coordinates."""
    x = data((640, 640), seed=14, low=-5, high=5)
    check("softmax", lambda t: lumen.softmax(t, dim), lambda t: torch.softmax(t, dim), [x], backend)
    check("sum", lambda t: 1.0 / lumen.sum(t * t, dim, True), lambda t: 1.0 / torch.sum(t * t, dim, True), [x], backend,
          rtol=1e-5)


def test_softmax_of_minus_infinity_rows(backend):
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0], [np.inf, 0.0, 1.0]], dtype=np.float32)
    check("softmax", lambda t: lumen.softmax(t, -1), lambda t: torch.softmax(t, -1), [x], backend)
    check("log_softmax", lambda t: lumen.log_softmax(t, -1), lambda t: torch.log_softmax(t, -1), [x], backend)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_cumprod(backend, dim):
    x = data((7, 33), seed=14)
    check("cumsum", lambda t: lumen.cumsum(t, dim), lambda t: torch.cumsum(t, dim), [x], backend, atol=1e-5)
    p = data((7, 9), seed=15, low=0.5, high=1.5)
    check("cumprod", lambda t: lumen.cumprod(t, dim), lambda t: torch.cumprod(t, dim), [p], backend)
    i = data((5, 6), lumen.int32, 16, -3, 3)
    check("cumsum", lambda t: lumen.cumsum(t, dim), lambda t: torch.cumsum(t, dim).int(), [i], backend)


def test_empty_reductions(backend):
    e = np.zeros((3, 0), dtype=np.float32)
    check("sum", lambda t: lumen.sum(t, 1), lambda t: torch.sum(t, 1), [e], backend)
    check("prod", lambda t: lumen.prod(t, 1), lambda t: torch.prod(t, 1), [e], backend)
    check("mean", lambda t: lumen.mean(t, 1), lambda t: torch.mean(t, 1), [e], backend)
    check("logsumexp", lambda t: lumen.logsumexp(t, 1), lambda t: torch.logsumexp(t, 1), [e], backend)
    check("all", lambda t: lumen.all(t, 1), lambda t: torch.all(t, 1), [e], backend)
    check("any", lambda t: lumen.any(t, 1), lambda t: torch.any(t, 1), [e], backend)


@pytest.mark.parametrize("shape,dim", [((512, 1024), None), ((3, 131072), -1), ((2, 512, 256), (1, 2))], ids=str)
def test_reductions_with_few_outputs(backend, shape, dim):
    # Few outputs of many elements each: compiled, the reduction is cut into
    # parts that threads compute in parallel, then combined (rfactor).
    x = data(shape, seed=5)
    td = tuple(range(len(shape))) if dim is None else dim
    tol = dict(rtol=1e-4, atol=1e-3)
    # A sum of 2^19 values in [-3, 3] that nearly cancel (|sum| ~ 3, Σ|x| ~ 8e5): f32 rounding in any order
    # leaves an absolute error of ~1e-3 (one standard deviation), so the sum gets 1e-2 (1.3e-8 of Σ|x|).
    check("sum", lambda t: lumen.sum(t, dim), lambda t: torch.sum(t, td), [x], backend, rtol=1e-4,
          atol=1e-2 if dim is None else 1e-3)
    check("mean", lambda t: lumen.mean(t, dim), lambda t: torch.mean(t, td), [x], backend, **tol)
    check("amax", lambda t: lumen.amax(t, dim), lambda t: torch.amax(t, td), [x], backend)
    check("amin", lambda t: lumen.amin(t, dim), lambda t: torch.amin(t, td), [x], backend)
    check("std", lambda t: lumen.std(t, dim), lambda t: torch.std(t, td), [x], backend, **tol)
    half = Input(data(shape, lumen.float16, seed=6), lumen.float16)
    check("sum", lambda t: lumen.sum(t, dim), lambda t: torch.sum(t.float(), td).half(), [half], backend,
          rtol=2e-2, atol=1.0)


def test_sum_of_everything_runs_in_parallel_parts():
    threads = lumen.cpu_info()["threads"]
    lumen.set_threads(2)
    try:
        _sum_of_everything_in_parts()
    finally:
        lumen.set_threads(threads)


def _sum_of_everything_in_parts():
    g = lumen.Graph()
    x = g.input("x", (512, 1024))
    p = lumen.compile(g, [lumen.sum(x)], tuning_cache=False)
    a = data((512, 1024), seed=7)
    p.set("x", a)
    p.run()
    # The sum (about 60) cancels terms whose magnitudes add to about 2.6e5: its
    # f32 rounding error is relative to that (8 lanes on AVX2 are off by 7e-4).
    np.testing.assert_allclose(p.get("out0"), a.astype(np.float64).sum(), rtol=0, atol=1e-7 * np.abs(a).sum())
    assert p.stats["kernels"] == 2  # the parts, then their sum


@pytest.mark.parametrize("n", [17, 196, 1000, 50257])
def test_rows_whose_length_the_simd_width_does_not_divide(backend, n):
    # Compiled, the last SIMD step of each row is masked: its missing lanes
    # must count as 0 for a sum and as -inf for a max (all values negative).
    x = data((6, n), seed=8, low=-4.0, high=-1.0)
    check("amax", lambda t: lumen.amax(t, -1), lambda t: torch.amax(t, -1), [x], backend)
    check("sum", lambda t: lumen.sum(t, -1), lambda t: torch.sum(t, -1), [x], backend, rtol=1e-5, atol=1e-3)
    check("softmax", lambda t: lumen.softmax(t, -1), lambda t: torch.softmax(t, -1), [x], backend)
    check("logsumexp", lambda t: lumen.logsumexp(t, -1), lambda t: torch.logsumexp(t, -1), [x], backend)


def test_channel_statistics_of_a_batch(backend):
    x = data((6, 8, 14, 14), seed=9)
    check("mean", lambda t: lumen.mean(t, (0, 2, 3)), lambda t: torch.mean(t, (0, 2, 3)), [x], backend)
    check("var", lambda t: lumen.var(t, (0, 2, 3)), lambda t: torch.var(t, (0, 2, 3)), [x], backend)


@pytest.mark.parametrize("n", [100, 1000, 5000])
def test_long_cumsum_in_blocks(backend, n):
    # Blocks of 16, their totals scanned recursively (5000: two levels). An
    # inf must reach only the positions after it, a NaN likewise.
    x = data((3, n), seed=17)
    x[1, n // 3] = np.inf
    x[2, n // 2] = np.nan
    check("cumsum", lambda t: lumen.cumsum(t, -1), lambda t: torch.cumsum(t, -1), [x], backend, rtol=1e-5, atol=1e-3)
    check("cumsum", lambda t: lumen.cumsum(t, 0), lambda t: torch.cumsum(t, 0), [x.T.copy()], backend, rtol=1e-5, atol=1e-3)
    # Along a middle axis: the blocks run down it, the last dim's rows in SIMD lanes.
    middle = np.ascontiguousarray(np.stack([x.T, -x.T]))  # [2, n, 3]
    check("cumsum", lambda t: lumen.cumsum(t, 1), lambda t: torch.cumsum(t, 1), [middle], backend, rtol=1e-5, atol=1e-3)
    i = data((2, n), lumen.int32, 18, -3, 3)
    check("cumsum", lambda t: lumen.cumsum(t, -1), lambda t: torch.cumsum(t, -1).int(), [i], backend)
