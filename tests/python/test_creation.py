"""Creation ops against PyTorch (random ones by their statistics)."""
import numpy as np
import pytest
import torch

import lumen
from harness import check, data, record, run


def _graph_fn(make):
    """A check() function that ignores its (dummy) input and builds from its graph."""
    return lambda t: make(t.graph)


DUMMY = [np.zeros((1,), np.float32)]


def test_zeros_ones_full(backend):
    check("zeros", _graph_fn(lambda g: g.zeros(2, 3)), lambda _: torch.zeros(2, 3), DUMMY, backend)
    check("ones", _graph_fn(lambda g: g.ones((4,), dtype=lumen.int32)), lambda _: torch.ones(4, dtype=torch.int32), DUMMY, backend)
    check("full", _graph_fn(lambda g: g.full((2, 2), 7.5)), lambda _: torch.full((2, 2), 7.5), DUMMY, backend)
    x = data((3, 5), seed=1)
    check("zeros_like", lumen.zeros_like, torch.zeros_like, [x], backend)
    check("ones_like", lumen.ones_like, torch.ones_like, [x], backend)
    check("full_like", lambda t: lumen.full_like(t, -2), lambda t: torch.full_like(t, -2), [x], backend)


@pytest.mark.parametrize("args", [(5,), (2, 11), (1, 10, 3), (10, 0, -2), (0.5, 3.0, 0.25), (-1.0, 1.0, 0.3)], ids=str)
def test_arange(backend, args):
    check("arange", _graph_fn(lambda g: g.arange(*args)), lambda _: _torch_arange(args), DUMMY, backend)


def _torch_arange(args):
    t = torch.arange(*args)
    return t.int() if t.dtype == torch.int64 else t


@pytest.mark.parametrize("args", [(0, 1, 5), (-3, 7, 11), (2, 2, 1), (1, -1, 4), (0, 10, 33)], ids=str)
def test_linspace(backend, args):
    check("linspace", _graph_fn(lambda g: g.linspace(*args)), lambda _: torch.linspace(*args), DUMMY, backend)


def test_eye_tril_triu(backend):
    check("eye", _graph_fn(lambda g: g.eye(4)), lambda _: torch.eye(4), DUMMY, backend)
    check("eye", _graph_fn(lambda g: g.eye(3, 5)), lambda _: torch.eye(3, 5), DUMMY, backend)
    x = data((2, 4, 5), seed=2)
    for k in (-1, 0, 2):
        check("tril", lambda t: lumen.tril(t, k), lambda t: torch.tril(t, k), [x], backend)
        check("triu", lambda t: t.triu(k), lambda t: t.triu(k), [x], backend)
    inf = np.full((3, 3), np.inf, np.float32)
    check("tril", lumen.tril, torch.tril, [inf], backend)


def test_rand_randn_are_seeded_and_well_distributed(backend):
    (u, n, u_same, u_other), _ = run(lambda t: (t.graph.rand(200, 300, seed=1), t.graph.randn(200, 300, seed=1),
                                                t.graph.rand(200, 300, seed=1), t.graph.rand(200, 300, seed=2)),
                                     DUMMY, backend)
    assert u.shape == (200, 300) and u.dtype == np.float32
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.std() - np.sqrt(1 / 12)) < 0.01
    assert np.array_equal(u, u_same)                 # same seed, same values
    assert np.mean(u == u_other) < 0.01              # another seed, other values
    assert abs(n.mean()) < 0.02 and abs(n.std() - 1) < 0.02
    assert abs(np.mean(np.abs(n) < 1) - 0.6827) < 0.01  # normal, not just unit variance
    # neighbouring elements are not correlated
    assert abs(np.corrcoef(u.ravel()[:-1], u.ravel()[1:])[0, 1]) < 0.02
    for k in range(1, 6):
        col = u[:, k]
        assert abs(np.corrcoef(u[:, 0], col)[0, 1]) < 0.2
    record("rand", "200x300 float32 (range, mean, std, seeds, correlation)")
    record("randn", "200x300 float32 (mean, std, 1-sigma mass)")
