"""Unary math and activation functions against PyTorch."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import lumen
import lumen.nn.functional as F
from harness import FLOATS, Input, check, data, run

UNARY = {
    "exp": (lumen.exp, torch.exp, (-5, 5)),
    "log": (lumen.log, torch.log, (0.01, 50)),
    "exp2": (lumen.exp2, torch.exp2, (-5, 5)),
    "log2": (lumen.log2, torch.log2, (0.01, 50)),
    "log10": (lumen.log10, torch.log10, (0.01, 50)),
    "sqrt": (lumen.sqrt, torch.sqrt, (0, 50)),
    "rsqrt": (lumen.rsqrt, torch.rsqrt, (0.01, 50)),
    "reciprocal": (lumen.reciprocal, torch.reciprocal, (0.1, 5)),
    "sin": (lumen.sin, torch.sin, (-10, 10)),
    "cos": (lumen.cos, torch.cos, (-10, 10)),
    "tan": (lumen.tan, torch.tan, (-1.4, 1.4)),
    "tanh": (lumen.tanh, torch.tanh, (-6, 6)),
    "erf": (lumen.erf, torch.erf, (-4, 4)),
    "sigmoid": (lumen.sigmoid, torch.sigmoid, (-10, 10)),
    "relu": (lumen.relu, torch.relu, (-3, 3)),
    "leaky_relu": (lambda t: F.leaky_relu(t, 0.1), lambda t: TF.leaky_relu(t, 0.1), (-3, 3)),
    "gelu": (F.gelu, TF.gelu, (-6, 6)),
    "gelu_tanh": (lambda t: F.gelu(t, approximate="tanh"), lambda t: TF.gelu(t, approximate="tanh"), (-6, 6)),
    "silu": (F.silu, TF.silu, (-8, 8)),
    "softplus": (F.softplus, TF.softplus, (-30, 30)),
    "mish": (F.mish, TF.mish, (-8, 8)),
    "floor": (lumen.floor, torch.floor, (-5, 5)),
    "ceil": (lumen.ceil, torch.ceil, (-5, 5)),
    "round": (lumen.round, torch.round, (-5, 5)),
    "trunc": (lumen.trunc, torch.trunc, (-5, 5)),
}

# Transcendentals composed via exp2/log2 lose up to a few float32 ulps more than libm.
LOOSE = {"exp": 2e-5, "tan": 2e-5, "mish": 2e-5, "softplus": 2e-5}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", [(7,), (1, 33), (33, 1000)], ids=str)
def test_unary_f32(backend, name, shape):
    fn, ref, (low, high) = UNARY[name]
    x = data(shape, seed=hash(name) % 1000, low=low, high=high)
    check(name.replace("_tanh", ""), fn, ref, [x], backend, rtol=LOOSE.get(name))


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", FLOATS[1:], ids=lambda d: d.name)
def test_unary_half(backend, name, dtype):
    fn, ref, (low, high) = UNARY[name]
    x = Input(data((5, 13), dtype, seed=7, low=low, high=high), dtype, layout="permuted")
    check(name.replace("_tanh", ""), fn, ref, [x], backend)


def test_rounding_ties_to_even(backend):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 3.5000002, 1e8 + 0.5, -7.0], dtype=np.float32)
    for name in ("round", "floor", "ceil", "trunc"):
        fn, ref, _ = UNARY[name]
        check(name, fn, ref, [x], backend, exact=True)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_special_values(backend, name):
    fn, ref, _ = UNARY[name]
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 80.0, -80.0], dtype=np.float32)
    if name == "gelu":
        # Deliberate difference: torch's gelu gives NaN at ±inf; lumen gives the limits of x·Φ(x)
        # (test_gelu_erf_wide_range checks them).
        x = x[np.isfinite(x) | np.isnan(x)]
    check(name.replace("_tanh", ""), fn, ref, [x], backend, rtol=LOOSE.get(name, 1e-5))


def test_log_of_zero_and_negative(backend):
    x = np.array([0.0, -1.0, 1.0], dtype=np.float32)
    check("log", lumen.log, torch.log, [x], backend)
    check("sqrt", lumen.sqrt, torch.sqrt, [x], backend)


def _wide_range_arguments():
    """Magnitudes 1e-30 .. 3e38 with both signs, plus the special values (odd length: a scalar tail too)."""
    magnitudes = np.logspace(-30, np.log10(3e38), 997).astype(np.float32)
    rng = np.random.default_rng(5)
    around = rng.uniform(-1e5, 1e5, 200).astype(np.float32)  # near and past the fast path's 8192 limit
    specials = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 8192.0, -8192.0, 8192.001, 1e9, 3.4028235e38],
                        dtype=np.float32)
    return np.concatenate([specials, magnitudes, -magnitudes[::3], around])


def _whole_vectors(x):
    """x cut to a multiple of 16 elements (specials first, so they stay): the kernels take the SIMD path."""
    return x[:len(x) // 16 * 16]


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_cos_large_arguments(backend, name):
    # Issue 14 item 3: the vectorized sin reduced |x| >~ 1e8 wrongly (sin(1e9) = 13.29, larger -> -inf).
    fn, ref, _ = UNARY[name]
    check(name, fn, ref, [_whole_vectors(_wide_range_arguments())], backend, rtol=1e-5, atol=3e-7)


def test_tan_large_arguments(backend):
    x = _wide_range_arguments()
    with np.errstate(invalid="ignore"):
        x = _whole_vectors(x[~np.isfinite(x) | (np.abs(np.cos(x.astype(np.float64))) > 1e-2)])  # away from poles
    check("tan", lumen.tan, torch.tan, [x], backend, rtol=1e-4, atol=1e-6)


SIN_ON_ISA = """
import sys, numpy as np, torch
sys.path.insert(0, {python!r})
import lumen
x = np.asarray([float(v) for v in {values!r}], dtype=np.float32)
g = lumen.Graph()
t = g.input("x", x.shape, lumen.float32)
outs = [lumen.sin(t), lumen.cos(t), lumen.tan(t)]
p = lumen.compile(g, outs, backend="cpu")
p.set("x", x)
p.run()
for out, ref in zip(outs, [torch.sin, torch.cos, torch.tan]):
    want = ref(torch.from_numpy(x)).numpy()
    rtol = 1e-4 if ref is torch.tan else 1e-5
    np.testing.assert_allclose(p.get(out), want, rtol=rtol, atol=3e-7, equal_nan=True, err_msg=str(ref))
"""


@pytest.mark.parametrize("isa", ["sse", "avx2"])
def test_sin_large_arguments_on_narrower_isa(isa):
    """The SSE (4 lanes) and AVX2 (8 lanes) builds of the vector sin, in a process limited by LUMEN_ISA."""
    import os
    import subprocess
    import sys
    x = _wide_range_arguments()
    with np.errstate(invalid="ignore"):
        x = _whole_vectors(x[~np.isfinite(x) | (np.abs(np.cos(x.astype(np.float64))) > 1e-2)])
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = SIN_ON_ISA.format(python=os.path.join(root, "python"), values=[repr(float(v)) for v in x])
    result = subprocess.run([sys.executable, "-c", script], env={**os.environ, "LUMEN_ISA": isa},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def _gelu_arguments():
    """±inf, NaN, ±0, subnormals, tiny to huge magnitudes and a dense sweep of [-14, 14]."""
    specials = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 1.2e-38, -1.2e-38,
                         1e30, -1e30, 3.4028235e38, -3.4028235e38], dtype=np.float32)
    magnitudes = np.logspace(-37, 1.2, 600).astype(np.float32)
    sweep = np.linspace(-14, 14, 5601).astype(np.float32)
    return np.concatenate([specials, magnitudes, -magnitudes, sweep])


@pytest.mark.parametrize("cut", [16, 1], ids=["simd", "scalar-tail"])
def test_gelu_erf_wide_range(backend, cut):
    """gelu (erf form) against x·Φ(x) in float64: relative error < 2e-6 where |x| <= 5.5 (torch's own float32
    gelu is off by up to ~1e-5 relative there, from 1 + erf cancelling); in the far negative tail, where the
    result is below 1e-7, relative 1e-3 (absolute 2e-37 once exp2 flushes below the normal range); the limits
    inf at +inf and 0 at -inf; NaN stays NaN."""
    x = _gelu_arguments()
    x = x[:len(x) // cut * cut]  # cut=16: whole vectors (the SIMD path); cut=1: an odd length, a scalar tail too
    (got,), _ = run(F.gelu, [x], backend)
    x64 = torch.from_numpy(x.astype(np.float64))
    want = (0.5 * x64 * torch.erfc(-x64 / np.sqrt(2.0))).numpy()
    want[x == np.inf], want[x == -np.inf] = np.inf, 0.0
    got = got.astype(np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(x))
    core = ~np.isnan(x) & (np.abs(x) <= 5.5)
    np.testing.assert_allclose(got[core], want[core], rtol=2e-6, atol=1e-44)
    tail = ~np.isnan(x) & (np.abs(x) > 5.5)
    np.testing.assert_allclose(got[tail], want[tail], rtol=1e-3, atol=2e-37)
