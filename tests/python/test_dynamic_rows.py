"""Rows whose length is a dynamic dim: SIMD vectors whose last one overhangs
the row's end (masked loads and stores), reductions with a masked tail, and
loops split where a concatenation's condition changes (a decode step's
attention over a cache and its new row). One compiled program runs every
length; each is checked against NumPy / PyTorch, lengths around the SIMD width
included, and nothing past a row's end is written."""
import numpy as np
import pytest
import torch

import lumen

LENGTHS = [1, 2, 15, 16, 17, 31, 33, 100, 1000]


def test_softmax_over_a_dynamic_row(backend):
    g = lumen.Graph()
    n = g.dim("n")
    y = lumen.softmax(g.input("x", (3, n)) * 0.5, dim=-1)
    p = lumen.compile(g, [y], backend=backend)
    rng = np.random.default_rng(0)
    for length in LENGTHS:
        x = rng.standard_normal((3, length)).astype(np.float32) * 4
        got = p(x=x)
        want = torch.softmax(torch.from_numpy(x) * 0.5, dim=-1).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=f"n = {length}")


def test_elementwise_on_a_dynamic_row_writes_no_further(backend):
    # The output is one row of a bigger buffer's worth: a masked store that
    # wrote past the row's end would corrupt the second output.
    g = lumen.Graph()
    n = g.dim("n")
    x = g.input("x", (2, n))
    a = (x * 3.0 + 1.0).exp()
    b = x.sum(dim=0)
    p = lumen.compile(g, [a, b], backend=backend)
    rng = np.random.default_rng(1)
    for length in LENGTHS:
        xv = rng.standard_normal((2, length)).astype(np.float32)
        got_a, got_b = p(x=xv)
        np.testing.assert_allclose(got_a, np.exp(xv * 3 + 1), rtol=1e-5, err_msg=f"n = {length}")
        np.testing.assert_allclose(got_b, xv.sum(0), rtol=1e-5, atol=1e-6, err_msg=f"n = {length}")


def test_column_sums_of_a_dynamic_width(backend):
    # Sums down 600 rows of a dynamic width: outputs SIMD along the width
    # (the last vector masked), the reduction cut into row blocks.
    g = lumen.Graph()
    n = g.dim("n")
    y = g.input("x", (600, n)).sum(dim=0)
    p = lumen.compile(g, [y], backend=backend)
    rng = np.random.default_rng(2)
    for length in [1, 17, 500]:
        x = rng.standard_normal((600, length)).astype(np.float32)
        np.testing.assert_allclose(p(x=x), x.sum(0), rtol=1e-4, atol=1e-4, err_msg=f"n = {length}")


def test_attention_over_a_cache_and_a_new_row(backend):
    # A decode step as the Llama runner writes it: keys and values are the
    # cache's first `past` rows with the step's row concatenated; grouped heads.
    heads, kv_heads, d, capacity = 6, 2, 32, 64
    g = lumen.Graph()
    past = g.dim("past")
    q = g.input("q", (heads, 1, d))
    k_new, v_new = g.input("k", (kv_heads, 1, d)), g.input("v", (kv_heads, 1, d))
    k_cache, v_cache = g.input("kc", (kv_heads, capacity, d)), g.input("vc", (kv_heads, capacity, d))
    keys = lumen.cat([k_cache[:, :past, :], k_new], dim=1)
    values = lumen.cat([v_cache[:, :past, :], v_new], dim=1)
    rep = heads // kv_heads
    keys = keys.reshape((kv_heads, 1, past + 1, d)).expand((kv_heads, rep, past + 1, d)).reshape((heads, past + 1, d))
    values = values.reshape((kv_heads, 1, past + 1, d)).expand((kv_heads, rep, past + 1, d)).reshape((heads, past + 1, d))
    scores = (q @ keys.transpose(1, 2)) * (d ** -0.5)
    out = lumen.softmax(scores, dim=-1) @ values
    p = lumen.compile(g, [out], backend=backend)
    rng = np.random.default_rng(3)
    arrays = {name: rng.standard_normal(s).astype(np.float32) for name, s in
              [("q", (heads, 1, d)), ("k", (kv_heads, 1, d)), ("v", (kv_heads, 1, d)),
               ("kc", (kv_heads, capacity, d)), ("vc", (kv_heads, capacity, d))]}
    t = {k: torch.from_numpy(v) for k, v in arrays.items()}
    for n_past in [0, 1, 15, 16, 17, 40, 63]:
        p.bind("past", n_past)
        got = p(**arrays)
        keys_t = torch.cat([t["kc"][:, :n_past], t["k"]], 1).repeat_interleave(rep, 0)
        values_t = torch.cat([t["vc"][:, :n_past], t["v"]], 1).repeat_interleave(rep, 0)
        want = torch.softmax(t["q"] @ keys_t.transpose(1, 2) * d ** -0.5, -1) @ values_t
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-5, err_msg=f"past = {n_past}")


@pytest.mark.parametrize("length", [17, 33, 100, 196, 1000])
def test_row_reductions_with_a_simd_tail(backend, length):
    # A reduction whose length SIMD lanes do not divide runs its whole vectors
    # unmasked and its tail masked (the loop split at the tail); the lanes are
    # combined after both: a combine placed between them loses the tail.
    g = lumen.Graph()
    x = g.input("x", (6, length))
    s, m, mean = x.sum(dim=-1), lumen.amax(x, -1), lumen.mean(x, (1,))
    p = lumen.compile(g, [s, m, mean], backend=backend)
    rng = np.random.default_rng(length)
    xv = rng.standard_normal((6, length)).astype(np.float32)
    xv[:, -1] = 50.0  # the row's maximum sits in the tail
    got_s, got_m, got_mean = p(x=xv)
    t = torch.from_numpy(xv)
    np.testing.assert_allclose(got_s, t.sum(-1).numpy(), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got_m, t.amax(-1).numpy(), rtol=0, atol=0)
    np.testing.assert_allclose(got_mean, t.mean(-1).numpy(), rtol=1e-5, atol=1e-5)


def test_dynamic_row_sums_split_at_the_tail(backend):
    g = lumen.Graph()
    n = g.dim("n")
    x = g.input("x", (4, n))
    p = lumen.compile(g, [x.sum(dim=-1)], backend=backend)
    rng = np.random.default_rng(2)
    for length in LENGTHS:
        xv = rng.standard_normal((4, length)).astype(np.float32)
        xv[:, -1] = 100.0
        np.testing.assert_allclose(p(x=xv), xv.astype(np.float64).sum(-1), rtol=1e-5, atol=1e-4, err_msg=f"n = {length}")
