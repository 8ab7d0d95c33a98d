"""int64 and float64 end to end: ops on i64/f64 inputs, mixed-dtype promotion,
casts, reductions, gather with i64 indices, creation ops and the numpy/torch
dtype mapping, against PyTorch on every backend. Integer results must be
exact, including values past 2^31 and 2^53 (never narrowed through i32 or
double)."""
import numpy as np
import pytest
import torch

import lumen

BIG = np.array([3_000_000_000, 2**62 + 1, -(2**53) - 1, 7, -3_000_000_007, 2**40 + 3, 11], np.int64)
SMALL = np.array([3, 1, 2, -3, 5, -7, 4], np.int64)
F64 = np.array([0.1, -2.5, 1e-300, 3.0000000000000004, -7.25, 1e15 + 0.5, 0.75], np.float64)


def run(backend, build, **feeds):
    """Builds a graph on inputs named like `feeds` (their numpy dtypes), runs it, returns numpy outputs."""
    g = lumen.Graph()
    inputs = {name: g.input(name, a.shape, lumen.dtype(a.dtype)) for name, a in feeds.items()}
    outs = build(**inputs)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    p = lumen.compile(g, outs, backend=backend)
    for name, a in feeds.items():
        p.set(name, a)
    p.run()
    return [p.get(o) for o in outs]


def same(got, want, rtol=1e-13):
    """Same dtype as torch; integers and bools exact, floats within rtol (f64) or f32 tolerance."""
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"dtype {got.dtype}, torch gives {want.dtype}"
    assert got.shape == want.shape, f"shape {got.shape}, torch gives {want.shape}"
    if want.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want)
    else:
        tol = rtol if want.dtype == np.float64 else 1e-6
        np.testing.assert_allclose(got, want, rtol=tol, atol=0, equal_nan=True)


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def test_int64_arithmetic_is_exact_past_2_31_and_2_53(backend):
    got = run(backend, lambda a, b: [a + b, a - b, a * b, a % b, -a, a * 4 + 1, a < b, a == b, lumen.maximum(a, b),
                                     lumen.minimum(a, b), abs(a)], a=BIG, b=SMALL)
    a, b = t(BIG), t(SMALL)
    want = [a + b, a - b, a * b, torch.remainder(a, b), -a, a * 4 + 1, a < b, a == b, torch.maximum(a, b),
            torch.minimum(a, b), torch.abs(a)]
    for g_, w in zip(got, want):
        same(g_, w)


def test_int64_integer_division_is_exact(backend):
    a = np.array([2**62 + 1, -(2**62) - 3, 3_000_000_001, -7, 7, 2**53 + 1, -(2**60)], np.int64)
    b = np.array([3, 7, -2, 2, -2, 3, 2**31 + 11], np.int64)
    got = run(backend, lambda a, b: [a // b, lumen.div(a, b, rounding_mode="trunc"), lumen.div(a, b, rounding_mode="floor")],
              a=a, b=b)
    ta, tb = t(a), t(b)
    for g_, w in zip(got, [ta // tb, torch.div(ta, tb, rounding_mode="trunc"), torch.div(ta, tb, rounding_mode="floor")]):
        same(g_, w)


def test_int64_wraps_like_torch_on_overflow(backend):
    x = np.array([2**62, 2**63 - 1, -(2**63)], np.int64)
    (s, p), = [run(backend, lambda a: [a + a, a * 3], a=x)]
    same(s, t(x) + t(x))
    same(p, t(x) * 3)


def test_float64_keeps_double_precision(backend):
    got = run(backend, lambda x, y: [x + y, x * y, x / y, x - y, lumen.sqrt(abs(x)), lumen.exp(y / 8), lumen.log(abs(x)),
                                     lumen.sin(x), x < y], x=F64, y=F64[::-1].copy())
    x, y = t(F64), t(F64[::-1].copy())
    want = [x + y, x * y, x / y, x - y, torch.sqrt(torch.abs(x)), torch.exp(y / 8), torch.log(torch.abs(x)), torch.sin(x),
            x < y]
    for g_, w in zip(got, want):
        same(g_, w, rtol=1e-12)
    # 0.1 + 0.2 in double is not 0.3; in float it would round to 0.3
    (r,) = run(backend, lambda x, y: x + y, x=np.array([0.1]), y=np.array([0.2]))
    assert r.dtype == np.float64 and r[0] == 0.1 + 0.2 and r[0] != 0.3


@pytest.mark.parametrize("da,db", [("int64", "int32"), ("int32", "int64"), ("float64", "float32"), ("float32", "float64"),
                                   ("int64", "float32"), ("int64", "float16"), ("int32", "float64"), ("bool", "int64"),
                                   ("int64", "float64"), ("float16", "float64")])
def test_mixed_dtypes_promote_like_torch(backend, da, db):
    a = (np.arange(1, 8) * 3).astype(da)
    b = (np.arange(7, 0, -1)).astype(db)
    got = run(backend, lambda a, b: [a + b, a * b, a < b], a=a, b=b)
    ta, tb = t(a), t(b)
    for g_, w in zip(got, [ta + tb, ta * tb, ta < tb]):
        same(g_, w, rtol=1e-12)


def test_python_scalars_keep_the_tensor_dtype(backend):
    got = run(backend, lambda a, x: [a + 2**40, a * 2, x * 0.1, a + 0.5], a=BIG, x=F64)
    a, x = t(BIG), t(F64)
    same(got[0], a + 2**40)
    same(got[1], a * 2)
    same(got[2], x * 0.1)
    same(got[3], a + 0.5, rtol=1e-6)  # int tensor with a float scalar: float32, as torch


CAST_VALUES = {
    "int64": np.array([0, 1, -1, 100, -100, 2**40 + 1, 3_000_000_000], np.int64),
    "float64": np.array([0.0, 1.5, -1.5, 100.25, -100.75, 2.0**40 + 1, 3e9 + 0.5], np.float64),
    "int32": np.array([0, 1, -1, 100, -100, 2**30, -(2**31)], np.int32),
    "float32": np.array([0.0, 1.5, -1.5, 100.25, -100.75, 2.0**30, 3e9], np.float32),
    "bool": np.array([0, 1, 1, 0, 1, 0, 1], np.bool_),
}


@pytest.mark.parametrize("src", list(CAST_VALUES))
@pytest.mark.parametrize("dst", ["int64", "float64", "int32", "float32", "bool", "float16"])
def test_casts_between_all_dtypes(backend, src, dst):
    x = CAST_VALUES[src]
    if dst == "int32" and src in ("float64", "float32"):
        x = x[np.abs(x) < 2**31]  # out-of-range float -> int32 is undefined in torch (lumen saturates)
    (got,) = run(backend, lambda x: x.cast(lumen.dtype(dst)), x=x)
    same(got, t(x).to(getattr(torch, dst)), rtol=0)


def test_int64_to_int32_wraps_and_floats_saturate(backend):
    big = np.array([2**32 + 5, -(2**31) - 1, 2**62], np.int64)
    (w,) = run(backend, lambda x: x.cast(lumen.int32), x=big)
    same(w, t(big).to(torch.int32))  # wraps, as torch
    f = np.array([1e300, -1e300, np.nan, 9.2e18], np.float64)
    (s,) = run(backend, lambda x: x.cast(lumen.int64), x=f)
    assert s.dtype == np.int64
    assert list(s) == [2**63 - 1, -(2**63), 0, int(np.float64(9.2e18))]  # exact: 9.2e18 as a double


def test_reductions_keep_int64_and_float64(backend):
    x = np.stack([BIG, SMALL, BIG[::-1].copy()])  # 3 x 7
    f = np.stack([F64, F64 * 2, -F64])
    got = run(backend, lambda x, f: [lumen.sum(x, 1), lumen.sum(x), lumen.amax(x, 0), lumen.amin(x, 1), lumen.argmax(x, 1),
                                     lumen.argmin(x, 0), lumen.sum(f, 0), lumen.mean(f, 1), lumen.amax(f, 1),
                                     lumen.argmax(f, 1), lumen.prod(x[:, :3] % 1000, 1)], x=x, f=f)
    tx, tf = t(x), t(f)
    want = [tx.sum(1), tx.sum(), tx.amax(0), tx.amin(1), tx.argmax(1), tx.argmin(0), tf.sum(0), tf.mean(1), tf.amax(1),
            tf.argmax(1), torch.remainder(tx[:, :3], 1000).prod(1)]
    for g_, w in zip(got, want):
        same(g_, w, rtol=1e-12)


def test_argmax_and_argmin_return_int64_like_torch(backend):
    x = np.array([[1.0, 5.0, 5.0, -2.0], [0.5, -3.0, 7.0, -3.0]], np.float32)
    got = run(backend, lambda x: [lumen.argmax(x, 1), lumen.argmin(x, 1), lumen.argmax(x)], x=x)
    tx = t(x)
    for g_, w in zip(got, [tx.argmax(1), tx.argmin(1), tx.argmax()]):
        same(g_, w)


def test_int64_min_is_exact_at_the_extremes(backend):
    x = np.array([[-(2**63), 2**63 - 1, 0], [5, -(2**63) + 1, 2**62]], np.int64)
    got = run(backend, lambda x: [lumen.amin(x, 1), lumen.argmin(x, 1), lumen.amax(x, 1)], x=x)
    tx = t(x)
    for g_, w in zip(got, [tx.amin(1), tx.argmin(1), tx.amax(1)]):
        same(g_, w)


def test_gather_with_int64_indices_computed_from_large_values(backend):
    data = np.array([[2**62 + 1, -5, 3_000_000_000], [7, 2**53 + 1, -(2**40)]], np.int64)
    offsets = np.array([[3_000_000_002, 3_000_000_000], [3_000_000_001, 3_000_000_001]], np.int64)
    # index = offset - 3e9: exact only in int64 (3e9 does not fit i32)
    got = run(backend, lambda d, o: [lumen.gather(d, 1, o - 3_000_000_000),
                                     lumen.index_select(d, 1, (o - 3_000_000_000).reshape((4,))),
                                     lumen.take_along_dim(d.cast(lumen.float64), o - 3_000_000_000, 1)],
              d=data, o=offsets)
    td, to = t(data), t(offsets) - 3_000_000_000
    want = [torch.gather(td, 1, to), torch.index_select(td, 1, to.reshape(4)), torch.take_along_dim(td.double(), to, 1)]
    for g_, w in zip(got, want):
        same(g_, w)


def test_gather_index_past_2_31_is_an_error_not_a_wrapped_read(backend):
    data = np.arange(6, dtype=np.float64).reshape(2, 3)
    idx = np.array([[2**32 + 1, 0], [1, 2]], np.int64)  # 2^32 + 1 would wrap to 1 in i32
    with pytest.raises(lumen.Error):
        run(backend, lambda d, i: lumen.gather(d, 1, i), d=data, i=idx)


def test_matmul_in_float64(backend):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 33)), rng.standard_normal((33, 7))
    (got,) = run(backend, lambda a, b: lumen.matmul(a, b), a=a, b=b)
    same(got, t(a) @ t(b), rtol=1e-12)


def test_creation_ops_make_int64_and_float64(backend):
    like = np.zeros((2, 3), np.float32)
    big = 2**62 + 1

    def build(x):
        g = x.graph
        return [lumen.zeros_like(x, dtype=torch.float64), lumen.ones_like(x, dtype=torch.int64),
                lumen.full_like(x, big, dtype=torch.int64), g.arange(3_000_000_000, 3_000_000_005),
                g.arange(0, 5, dtype=torch.int64), g.arange(0, 1, 0.25, dtype=torch.float64),
                g.full((2,), big, dtype=lumen.int64), g.zeros(2, 2, dtype=np.float64)]
    got = run(backend, build, x=like)
    want = [torch.zeros(2, 3, dtype=torch.float64), torch.ones(2, 3, dtype=torch.int64),
            torch.full((2, 3), big, dtype=torch.int64), torch.arange(3_000_000_000, 3_000_000_005),
            torch.arange(0, 5, dtype=torch.int64), torch.arange(0, 1, 0.25, dtype=torch.float64),
            torch.full((2,), big, dtype=torch.int64), torch.zeros(2, 2, dtype=torch.float64)]
    for g_, w in zip(got, want):
        same(g_, w)


def test_arange_past_2_53_is_exact(backend):
    start = 2**60 + 1
    (got, down) = run(backend, lambda x: [x.graph.arange(start, start + 7, 3), x.graph.arange(start, start - 5, -2)],
                      x=np.zeros(1, np.float32))
    same(got, torch.arange(start, start + 7, 3))
    same(down, torch.arange(start, start - 5, -2))


def test_int64_constant_past_2_53_is_exact(backend):
    (got,) = run(backend, lambda a: a + a.graph.constant(2**62 + 1, lumen.int64), a=np.array([0, 1], np.int64))
    assert got.dtype == np.int64 and list(got) == [2**62 + 1, 2**62 + 2]


def test_long_and_double_methods(backend):
    got = run(backend, lambda x: [x.long(), x.double(), x.to(torch.int64)], x=np.array([1.5, -2.5], np.float32))
    same(got[0], torch.tensor([1, -2]))
    same(got[1], torch.tensor([1.5, -2.5], dtype=torch.float64))
    same(got[2], torch.tensor([1, -2]))


def test_dtype_names_map_from_numpy_and_torch():
    assert lumen.dtype(torch.int64) == lumen.int64 and lumen.dtype(torch.float64) == lumen.float64
    assert lumen.dtype(np.int64) == lumen.int64 and lumen.dtype(np.float64) == lumen.float64
    assert lumen.dtype("long") == lumen.int64 and lumen.dtype("double") == lumen.float64


def test_int64_and_float64_inputs_round_trip_through_numpy_and_torch(backend):
    g = lumen.Graph()
    a = g.input("a", (7,), lumen.int64)
    f = g.input("f", (7,), lumen.float64)
    outs = [a + 0, f * 1.0]
    p = lumen.compile(g, outs, backend=backend)
    p.set("a", t(BIG))           # a torch tensor
    p.set("f", F64[::-1])        # a negative-stride view: copied exactly
    p.run()
    ga, gf = [p.get(o) for o in outs]
    assert ga.dtype == np.int64 and np.array_equal(ga, BIG)
    assert gf.dtype == np.float64 and np.array_equal(gf, F64[::-1])


def test_int32_input_refuses_a_value_past_2_31():
    g = lumen.Graph()
    a = g.input("a", (2,), lumen.int32)
    p = lumen.compile(g, [a + 1], backend="interp")
    with pytest.raises(lumen.Error, match="does not fit"):
        p.set("a", np.array([1, 3_000_000_000], np.int64))


def test_int_scalar_past_int32_next_to_an_int32_tensor_is_refused():
    g = lumen.Graph()
    a = g.input("a", (2,), lumen.int32)
    with pytest.raises(OverflowError):
        a + 3_000_000_000
