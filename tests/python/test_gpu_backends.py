"""The GPU backends from Python: backend="opencl" runs (PoCL on a CPU here),
backend="cuda" without a GPU raises lumen.Error naming what to use instead."""
import numpy as np
import pytest
import torch

import lumen


def test_opencl_softmax_matches_torch():
    g = lumen.Graph()
    x = g.input("x", [7, 1000])
    y = lumen.softmax(x, -1)
    a = np.random.default_rng(3).standard_normal((7, 1000)).astype(np.float32)
    program = g.compile([y], backend="opencl")
    assert program.backend == "opencl"
    got = program(x=a)
    want = torch.softmax(torch.from_numpy(a), -1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_unknown_backend_lists_the_gpu_backends():
    g = lumen.Graph()
    x = g.input("x", [3])
    with pytest.raises(lumen.Error, match="opencl, cuda"):
        g.compile([x * 2.0], backend="metal")


def test_cuda_without_a_gpu_says_so():
    g = lumen.Graph()
    x = g.input("x", [3])
    try:
        program = g.compile([x * 2.0], backend="cuda")
    except lumen.Error as e:
        assert "cuda" in str(e) and "opencl" in str(e)
        return
    # A machine with a GPU: the program must run and be right.
    np.testing.assert_allclose(program(x=np.arange(3, dtype=np.float32)), [0.0, 2.0, 4.0])
