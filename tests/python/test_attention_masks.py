"""Attention variants written as users write them, against PyTorch: causal
masks (is_causal, and where(col > row, -inf, scores) with arange), an additive
bias, a sliding window, grouped-query heads, a non-default scale and
cross-attention. The cpu backend runs masked reductions over the unmasked
range only (kernel/known_region.h); results must not change."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import lumen
import lumen.nn.functional as F
from harness import check, data

RTOL = ATOL = 2e-5


def scores_of(q, k, scale=None):
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    return lumen.matmul(q, k.transpose(-1, -2)) * s


def plain_attention(q, k, v, mask_fn=None, scale=None):
    """matmul, scale, mask written with where and arange, softmax, matmul."""
    s = scores_of(q, k, scale)
    if mask_fn is not None:
        g = q.graph
        sq, sk = s.shape[-2], s.shape[-1]
        row, col = g.arange(sq).reshape(sq, 1), g.arange(sk).reshape(1, sk)
        s = lumen.where(mask_fn(row, col), float("-inf"), s)
    return lumen.matmul(lumen.softmax(s, -1), v)


def torch_attention(q, k, v, mask_fn=None, scale=None):
    s = q @ k.transpose(-1, -2) * (scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    if mask_fn is not None:
        row, col = torch.arange(s.shape[-2]).reshape(-1, 1), torch.arange(s.shape[-1]).reshape(1, -1)
        s = torch.where(mask_fn(row, col), float("-inf"), s)
    return torch.softmax(s, -1) @ v


def qkv(b, h, sq, sk, d, hk=None, seed=0):
    hk = hk or h
    return (data((b, h, sq, d), seed=seed, low=-1, high=1), data((b, hk, sk, d), seed=seed + 1, low=-1, high=1),
            data((b, hk, sk, d), seed=seed + 2, low=-1, high=1))


@pytest.mark.parametrize("s", [37, 64, 100])
def test_causal_where_with_arange(backend, s):
    causal = lambda row, col: col > row  # noqa: E731
    check("scaled_dot_product_attention", lambda q, k, v: plain_attention(q, k, v, causal),
          lambda q, k, v: torch_attention(q, k, v, causal), list(qkv(1, 2, s, s, 16, seed=s)), backend, RTOL, ATOL)


@pytest.mark.parametrize("s", [37, 64])
def test_sdpa_is_causal(backend, s):
    check("scaled_dot_product_attention", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
          lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True), list(qkv(1, 2, s, s, 16, seed=3)),
          backend, RTOL, ATOL)


def test_additive_float_bias(backend):
    q, k, v = qkv(1, 2, 37, 37, 16, seed=7)
    bias = data((37, 37), seed=10, low=-2, high=2)
    bias[np.triu_indices(37, 1)] = -np.inf  # an additive causal mask, as HF models build it
    check("scaled_dot_product_attention", lambda a, b, c, m: lumen.matmul(lumen.softmax(scores_of(a, b) + m, -1), c),
          lambda a, b, c, m: torch.softmax(a @ b.transpose(-1, -2) / 4.0 + m, -1) @ c, [q, k, v, bias], backend, RTOL, ATOL)
    check("scaled_dot_product_attention", lambda a, b, c, m: F.scaled_dot_product_attention(a, b, c, attn_mask=m),
          lambda a, b, c, m: TF.scaled_dot_product_attention(a, b, c, attn_mask=m), [q, k, v, bias], backend, RTOL, ATOL)


def test_sliding_window(backend):
    window = 256
    outside = lambda row, col: (col > row) | (col <= row - window)  # noqa: E731
    check("scaled_dot_product_attention", lambda q, k, v: plain_attention(q, k, v, outside),
          lambda q, k, v: torch_attention(q, k, v, outside), list(qkv(1, 1, 300, 300, 8, seed=11)), backend, RTOL, ATOL)


def test_band(backend):
    band = lambda row, col: (col > row + 3) | (col < row - 5)  # noqa: E731
    check("scaled_dot_product_attention", lambda q, k, v: plain_attention(q, k, v, band),
          lambda q, k, v: torch_attention(q, k, v, band), list(qkv(1, 2, 50, 50, 8, seed=12)), backend, RTOL, ATOL)


def test_grouped_query_heads(backend):
    check("scaled_dot_product_attention",
          lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
          lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
          list(qkv(1, 8, 40, 40, 16, hk=2, seed=13)), backend, RTOL, ATOL)


def test_non_default_scale(backend):
    causal = lambda row, col: col > row  # noqa: E731
    check("scaled_dot_product_attention", lambda q, k, v: plain_attention(q, k, v, causal, scale=0.37),
          lambda q, k, v: torch_attention(q, k, v, causal, scale=0.37), list(qkv(1, 2, 45, 45, 16, seed=14)), backend,
          RTOL, ATOL)
    check("scaled_dot_product_attention", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.37),
          lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.37),
          list(qkv(1, 2, 45, 45, 16, seed=15)), backend, RTOL, ATOL)


@pytest.mark.parametrize("causal", [False, True])
def test_cross_attention(backend, causal):
    q, k, v = qkv(2, 2, 29, 70, 16, seed=16)
    check("scaled_dot_product_attention", lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=causal),
          lambda a, b, c: TF.scaled_dot_product_attention(a, b, c, is_causal=causal), [q, k, v], backend, RTOL, ATOL)
    mask = lambda row, col: col > row + 41  # noqa: E731  (bottom-right aligned causal)
    check("scaled_dot_product_attention", lambda a, b, c: plain_attention(a, b, c, mask),
          lambda a, b, c: torch_attention(a, b, c, mask), [q, k, v], backend, RTOL, ATOL)


def test_masked_scores_stay_exact(backend):
    """The masked score matrix itself (a known constant where masked): -inf exactly there, every other value as torch."""
    q, k = data((1, 2, 37, 16), seed=17), data((1, 2, 37, 16), seed=18)
    causal = lambda row, col: col > row  # noqa: E731

    def lumen_scores(a, b):
        g = a.graph
        row, col = g.arange(37).reshape(37, 1), g.arange(37).reshape(1, 37)
        return lumen.where(causal(row, col), float("-inf"), scores_of(a, b))

    def torch_scores(a, b):
        row, col = torch.arange(37).reshape(-1, 1), torch.arange(37).reshape(1, -1)
        return torch.where(causal(row, col), float("-inf"), a @ b.transpose(-1, -2) / 4.0)

    check("scaled_dot_product_attention", lumen_scores, torch_scores, [q, k], backend, RTOL, ATOL)


def test_where_exact_with_infinities_and_nan(backend):
    """where lowers to a select: inf, -inf and NaN pass through exactly, on SIMD lanes and tails."""
    rng = np.random.default_rng(19)
    specials = np.array([np.inf, -np.inf, np.nan, 0.0, -1.5], dtype=np.float32)
    a = rng.choice(specials, size=(5, 37)).astype(np.float32)
    b = rng.choice(specials, size=(5, 37)).astype(np.float32)
    c = rng.random((5, 37)) < 0.5
    check("where", lumen.where, torch.where, [c, a, b], backend, exact=True)

    def masked(x, y):
        g = x.graph
        row, col = g.arange(5).reshape(5, 1), g.arange(37).reshape(1, 37)
        return lumen.where(col > row * 7, x, y)

    check("where", masked, lambda x, y: torch.where(torch.arange(37).reshape(1, 37) > torch.arange(5).reshape(5, 1) * 7, x, y),
          [a, b], backend, exact=True)


@pytest.mark.parametrize("dtype", [lumen.float16, lumen.bfloat16], ids=lambda d: d.name)
def test_causal_half_precision(backend, dtype):
    from harness import Input
    q, k, v = (Input(data((1, 2, 33, 16), dtype, seed, low=-1, high=1), dtype) for seed in (20, 21, 22))
    causal = lambda row, col: col > row  # noqa: E731
    check("scaled_dot_product_attention", lambda a, b, c: plain_attention(a, b, c, causal),
          lambda a, b, c: torch_attention(a.float(), b.float(), c.float(), causal), [q, k, v], backend,
          3e-2, 3e-2)


def test_where_masked_attention_is_sliced():
    """where() inside the scores' group does not keep it from running chunk by
    chunk along the query rows (kernel/slicing.h): the 32 MiB of scores never
    exist at once, and the result still matches PyTorch."""
    causal = lambda row, col: col > row  # noqa: E731
    arrays = qkv(1, 8, 1024, 1024, 64, seed=21)
    g = lumen.Graph()
    ins = [g.input(n, a.shape) for n, a in zip("qkv", arrays)]
    out = plain_attention(*ins, causal)
    p = lumen.compile(g, [out], backend="cpu")
    assert p.stats["sliced_groups"] == 1, p.report()
    for n, a in zip("qkv", arrays):
        p.set(n, a)
    p.run()
    assert p.stats["arena_bytes"] < 16 * 2**20, p.report()
    want = torch_attention(*[torch.from_numpy(a) for a in arrays], causal).numpy()
    np.testing.assert_allclose(p.get(out), want, rtol=1e-4, atol=1e-5)


def test_graph_search_keeps_the_sliced_form(tmp_path):
    """With a search budget the graph-level search may find rewrites of the
    same attention that run faster unsliced; none may win by materialising
    the scores the original holds one chunk at a time."""
    causal = lambda row, col: col > row  # noqa: E731
    arrays = qkv(1, 8, 1024, 1024, 64, seed=22)
    g = lumen.Graph()
    ins = [g.input(n, a.shape) for n, a in zip("qkv", arrays)]
    out = plain_attention(*ins, causal)
    p = lumen.compile(g, [out], backend="cpu", budget_s=2, cache_path=str(tmp_path / "t.db"))
    report = p.report()
    assert "graph search: measured" in report, report
    assert p.stats["sliced_groups"] >= 1, report
    for n, a in zip("qkv", arrays):
        p.set(n, a)
    p.run()
    assert p.stats["arena_bytes"] < 16 * 2**20, report
    want = torch_attention(*[torch.from_numpy(a) for a in arrays], causal).numpy()
    np.testing.assert_allclose(p.get(out), want, rtol=1e-4, atol=1e-5)
