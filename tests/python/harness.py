"""Compares lumen ops against PyTorch: builds a graph around numpy inputs
(optionally seen through permuted or sliced views), compiles it for a
backend, runs it and checks the outputs with dtype-aware tolerances."""
from __future__ import annotations

import numpy as np
import torch

import lumen

# rtol, atol per dtype. f32 bounds cover the composed transcendental functions
# (exp via exp2, erf by a 2e-7 approximation).
TOLERANCE = {
    lumen.float32: (1e-5, 1e-5),
    lumen.float16: (2e-3, 2e-3),
    lumen.bfloat16: (1.6e-2, 1.6e-2),
}
TORCH_DTYPE = {
    lumen.float32: torch.float32, lumen.float16: torch.float16, lumen.bfloat16: torch.bfloat16,
    lumen.int32: torch.int32, lumen.bool_: torch.bool,
}
NUMPY_DTYPE = {lumen.float32: np.float32, lumen.float16: np.float16, lumen.bfloat16: np.float32,
               lumen.int32: np.int32, lumen.bool_: np.bool_}

CURRENT: dict[str, set] = {}   # ops checked by the running test -> case descriptions
COVERAGE: dict[str, dict] = {}  # filled by conftest from CURRENT

FLOATS = [lumen.float32, lumen.float16, lumen.bfloat16]


def data(shape, dtype=lumen.float32, seed=0, low=-3.0, high=3.0):
    """Seeded random input of `shape` in `dtype` (bf16 values as float32 numbers)."""
    rng = np.random.default_rng(seed)
    if dtype == lumen.bool_:
        return rng.random(shape) < 0.5
    if dtype == lumen.int32:
        return rng.integers(int(low), int(high) + 1, size=shape, dtype=np.int32)
    values = rng.uniform(low, high, size=shape).astype(np.float32)
    if dtype == lumen.float16:
        return values.astype(np.float16)
    if dtype == lumen.bfloat16:
        return torch.from_numpy(values).to(torch.bfloat16).to(torch.float32).numpy()
    return values


def to_torch(array, dtype):
    array = np.asarray(array)  # (ascontiguousarray alone would make a 0-d array 1-d)
    return torch.from_numpy(np.ascontiguousarray(array).reshape(array.shape)).to(TORCH_DTYPE[dtype])


class Input:
    """An input value with its lumen dtype and the layout it is read through."""

    def __init__(self, array, dtype=None, layout="contiguous"):
        self.array = np.asarray(array)
        self.dtype = dtype if dtype is not None else _infer_dtype(self.array)
        self.layout = layout


def _infer_dtype(a):
    if a.dtype == np.bool_:
        return lumen.bool_
    if a.dtype.kind in "iu":
        return lumen.int32
    if a.dtype == np.float16:
        return lumen.float16
    return lumen.float32


def _as_input(x):
    return x if isinstance(x, Input) else Input(x)


def _declare(g, name, inp):
    """The graph input for `inp` plus the numpy array to feed it."""
    a = inp.array
    if inp.layout == "contiguous" or a.ndim == 0:
        return g.input(name, a.shape, inp.dtype), a
    if inp.layout == "permuted":  # stored transposed, read back through a permute view
        order = list(range(a.ndim))[::-1]
        stored = np.ascontiguousarray(a.transpose(order))
        return g.input(name, stored.shape, inp.dtype).permute(*order), stored
    if inp.layout == "sliced":  # stored with a border, read back through a slice view
        stored = np.zeros(tuple(d + 2 for d in a.shape), dtype=a.dtype)
        stored[tuple(slice(1, d + 1) for d in a.shape)] = a
        t = g.input(name, stored.shape, inp.dtype)
        return t[tuple(slice(1, d + 1) for d in a.shape)], stored
    raise ValueError(inp.layout)


def run(fn, inputs, backend="interp"):
    """Runs `fn` on graph inputs made from `inputs`; returns numpy outputs (tuple)."""
    g = lumen.Graph()
    tensors, feeds = [], {}
    for i, x in enumerate(inputs):
        inp = _as_input(x)
        t, stored = _declare(g, f"in{i}", inp)
        tensors.append(t)
        feeds[f"in{i}"] = stored
    out = fn(*tensors)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    program = lumen.compile(g, outs, backend=backend)
    for name, value in feeds.items():
        program.set(name, value)
    program.run()
    return tuple(program.get(o) for o in outs), outs


def _describe(inputs):
    parts = []
    for x in inputs:
        inp = _as_input(x)
        shape = "x".join(str(d) for d in inp.array.shape) or "scalar"
        layout = "" if inp.layout == "contiguous" else f" {inp.layout}"
        parts.append(f"{shape} {inp.dtype.name}{layout}")
    return ", ".join(parts)


def check(op, fn, torch_fn, inputs, backend="interp", rtol=None, atol=None, exact=False):
    """Checks lumen `fn` against `torch_fn` on `inputs` (arrays or Input)."""
    inputs = [_as_input(x) for x in inputs]
    got, tensors = run(fn, inputs, backend)
    expected = torch_fn(*[to_torch(x.array, x.dtype) for x in inputs])
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    assert len(got) == len(expected), f"{op}: {len(got)} outputs, torch gives {len(expected)}"
    for g_out, t_out, t in zip(got, expected, tensors):
        compare(op, g_out, t_out, t.dtype, rtol, atol, exact)
    CURRENT.setdefault(op, set()).add(_describe(inputs))


def record(op, description):
    """Records a check of `op` made without check() (e.g. statistical tests)."""
    CURRENT.setdefault(op, set()).add(description)


def compare(op, got, expected, dtype, rtol=None, atol=None, exact=False):
    if isinstance(expected, torch.Tensor):
        want = expected.detach().to(torch.float32 if expected.is_floating_point() else expected.dtype).numpy()
    else:
        want = np.asarray(expected)
    got = np.asarray(got)
    assert tuple(got.shape) == tuple(want.shape), f"{op}: shape {got.shape}, torch gives {want.shape}"
    if want.dtype == np.bool_ or got.dtype == np.bool_:
        assert got.dtype == np.bool_, f"{op}: dtype {got.dtype}, torch gives bool"
        np.testing.assert_array_equal(got, want, err_msg=op)
        return
    if want.dtype.kind in "iu":
        assert got.dtype.kind in "iu", f"{op}: dtype {got.dtype}, torch gives {want.dtype}"
        np.testing.assert_array_equal(got.astype(np.int64), want.astype(np.int64), err_msg=op)
        return
    r, a = TOLERANCE.get(dtype, TOLERANCE[lumen.float32])
    if exact:
        r, a = 0.0, 0.0
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol if rtol is not None else r,
                               atol=atol if atol is not None else a, equal_nan=True, err_msg=op)


def expect_error(fn, *fragments):
    """fn() must raise lumen.Error whose message contains every fragment."""
    try:
        fn()
    except lumen.Error as e:
        for frag in fragments:
            assert frag in str(e), f"message {str(e)!r} lacks {frag!r}"
        return str(e)
    raise AssertionError("expected lumen.Error")
