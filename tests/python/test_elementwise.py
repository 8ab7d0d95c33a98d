"""Arithmetic, comparison and logic ops against PyTorch."""
import numpy as np
import pytest
import torch

import lumen
from harness import FLOATS, Input, check, data, expect_error

BINARY = {
    "add": (lambda a, b: a + b, torch.add),
    "sub": (lambda a, b: a - b, torch.sub),
    "mul": (lambda a, b: a * b, torch.mul),
    "div": (lambda a, b: a / b, torch.div),
    "maximum": (lumen.maximum, torch.maximum),
    "minimum": (lumen.minimum, torch.minimum),
    "eq": (lambda a, b: a == b, torch.eq),
    "ne": (lambda a, b: a != b, torch.ne),
    "lt": (lambda a, b: a < b, torch.lt),
    "le": (lambda a, b: a <= b, torch.le),
    "gt": (lambda a, b: a > b, torch.gt),
    "ge": (lambda a, b: a >= b, torch.ge),
}

BROADCAST_SHAPES = [((7,), (7,)), ((4, 1, 5), (3, 1)), ((1, 33), (6, 1)), ((2, 3), ()), ((1,), (1000,))]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=lambda s: f"{s[0]}-{s[1]}")
def test_binary_f32_broadcasting(backend, name, shapes):
    fn, ref = BINARY[name]
    a, b = data(shapes[0], seed=1), data(shapes[1], seed=2)
    if name in ("eq", "ne", "le", "ge"):  # make ties happen
        b = np.round(b).astype(np.float32)
        a = np.round(a).astype(np.float32)
    check(name, fn, ref, [a, b], backend)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", FLOATS[1:], ids=lambda d: d.name)
def test_binary_half_precision(backend, name, dtype):
    fn, ref = BINARY[name]
    check(name, fn, ref, [Input(data((5, 7), dtype, 3), dtype), Input(data((7,), dtype, 4), dtype)], backend)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "maximum", "minimum", "eq", "lt", "ge"])
@pytest.mark.parametrize("layout", ["permuted", "sliced"])
def test_binary_non_contiguous(backend, name, layout):
    fn, ref = BINARY[name]
    check(name, fn, ref, [Input(data((5, 7), seed=5), layout=layout), Input(data((5, 7), seed=6), layout=layout)], backend)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "maximum", "minimum", "eq", "lt"])
def test_binary_int32(backend, name):
    fn, ref = BINARY[name]
    a = data((4, 6), lumen.int32, 7, -50, 50)
    b = data((6,), lumen.int32, 8, -50, 50)
    check(name, fn, ref, [a, b], backend)


def test_int_extremes_min_max(backend):
    a = np.array([-2147483648, 2147483647, 0, -1], dtype=np.int32)
    b = np.array([2147483647, -2147483648, -1, 0], dtype=np.int32)
    check("minimum", lumen.minimum, torch.minimum, [a, b], backend)
    check("maximum", lumen.maximum, torch.maximum, [a, b], backend)


def test_scalar_operands_and_promotion(backend):
    x = data((3, 4), seed=9)
    check("add", lambda t: t + 2, lambda t: t + 2, [x], backend)
    check("sub", lambda t: 1.5 - t, lambda t: 1.5 - t, [x], backend)
    check("mul", lambda t: t * 3, lambda t: t * 3, [x], backend)
    check("div", lambda t: 2.0 / t, lambda t: 2.0 / t, [x], backend)
    i = data((3, 4), lumen.int32, 10, -9, 9)
    check("add", lambda t: t + 2, lambda t: t + 2, [i], backend)          # stays int
    check("mul", lambda t: t * 0.5, lambda t: t * 0.5, [i], backend)      # promotes to float
    check("div", lambda t: t / 2, lambda t: t / 2, [i], backend)          # true division
    check("add", lambda a, b: a + b, lambda a, b: a + b, [i, x], backend)  # int + float tensor


@pytest.mark.parametrize("dtype", [lumen.float32, lumen.int32], ids=lambda d: d.name)
def test_floor_divide_remainder_fmod_signs(backend, dtype):
    a = np.array([7, -7, 7, -7, 6, -6, 0, 5, 13], dtype=np.float32)
    b = np.array([3, 3, -3, -3, 3, -3, 4, 7, -5], dtype=np.float32)
    if dtype == lumen.int32:
        a, b = a.astype(np.int32), b.astype(np.int32)
    check("floor_divide", lambda x, y: x // y, torch.floor_divide, [a, b], backend)
    check("remainder", lambda x, y: x % y, torch.remainder, [a, b], backend)
    check("fmod", lumen.fmod, torch.fmod, [a, b], backend)


def test_floor_divide_random_floats(backend):
    a, b = data((33,), seed=11, low=-20, high=20), data((33,), seed=12, low=0.5, high=4)
    check("floor_divide", lambda x, y: x // y, torch.floor_divide, [a, b], backend)
    check("remainder", lambda x, y: x % y, torch.remainder, [a, b], backend, atol=1e-5)
    check("div", lambda x, y: lumen.div(x, y, rounding_mode="trunc"), lambda x, y: torch.div(x, y, rounding_mode="trunc"), [a, b], backend)


def test_pow_variants(backend):
    x = data((7, 5), seed=13, low=0.1, high=3)
    check("pow", lambda t: t ** 2, lambda t: t ** 2, [x], backend)
    check("pow", lambda t: t ** 0.5, lambda t: t ** 0.5, [x], backend)
    check("pow", lambda t: t ** -1.5, lambda t: t ** -1.5, [x], backend)
    check("pow", lambda t: t ** 3, lambda t: t ** 3, [data((7,), seed=14)], backend)
    e = data((7, 5), seed=15, low=-2, high=2)
    check("pow", lambda a, b: a ** b, torch.pow, [x, e], backend, rtol=2e-5)
    # negative base with integer and non-integer exponents, zero base, zero exponent
    a = np.array([-2, -2, -2, 0, 0, 0, np.nan, 2], dtype=np.float32)
    b = np.array([2, 3, 0.5, 0, 2, -1, 0, -2], dtype=np.float32)
    check("pow", lambda p, q: p ** q, torch.pow, [a, b], backend)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_unary_arith(backend, dtype):
    x = Input(data((33,), dtype, 16), dtype)
    check("neg", lambda t: -t, torch.neg, [x], backend)
    check("abs", lumen.abs, torch.abs, [x], backend)
    check("sign", lumen.sign, torch.sign, [x], backend)


def test_unary_arith_special_values(backend):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -3.5, 2.0], dtype=np.float32)
    check("abs", lumen.abs, torch.abs, [x], backend)
    check("sign", lumen.sign, torch.sign, [x], backend)
    check("neg", lambda t: -t, torch.neg, [x], backend)
    check("maximum", lambda t: lumen.maximum(t, t * 0 + 1), lambda t: torch.maximum(t, t * 0 + 1), [x], backend)


def test_clamp(backend):
    x = data((4, 33), seed=17)
    check("clamp", lambda t: lumen.clamp(t, -1, 0.5), lambda t: torch.clamp(t, -1, 0.5), [x], backend)
    check("clamp", lambda t: lumen.clamp(t, min=0), lambda t: torch.clamp(t, min=0), [x], backend)
    check("clamp", lambda t: lumen.clamp(t, max=0), lambda t: torch.clamp(t, max=0), [x], backend)
    lo, hi = data((33,), seed=18, low=-2, high=0), data((4, 1), seed=19, low=0, high=2)
    check("clamp", lambda t, a, b: lumen.clamp(t, a, b), lambda t, a, b: torch.clamp(t, a, b), [x, lo, hi], backend)


def test_where_is_exact_with_infinities(backend):
    c = np.array([True, False, True, False, True])
    a = np.array([np.inf, 1.0, np.nan, -np.inf, -0.5], dtype=np.float32)
    b = np.array([2.0, -np.inf, 3.0, np.nan, np.inf], dtype=np.float32)
    check("where", lumen.where, torch.where, [c, a, b], backend)


def test_where_broadcasting_and_scalars(backend):
    c = data((4, 1, 5), lumen.bool_, 20)
    a, b = data((3, 1), seed=21), data((5,), seed=22)
    check("where", lumen.where, torch.where, [c, a, b], backend)
    check("where", lambda cc, x: lumen.where(cc, x, 0.0), lambda cc, x: torch.where(cc, x, 0.0), [c, a], backend)
    ci = data((6,), lumen.int32, 23, -5, 5)
    check("where", lambda cc: lumen.where(cc > 0, cc, -1), lambda cc: torch.where(cc > 0, cc, -1), [ci], backend)


def test_comparisons_with_nan(backend):
    a = np.array([np.nan, 1.0, np.nan, np.inf, -np.inf], dtype=np.float32)
    b = np.array([np.nan, np.nan, 1.0, np.inf, -np.inf], dtype=np.float32)
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        fn, ref = BINARY[name]
        check(name, fn, ref, [a, b], backend)
    check("isnan", lumen.isnan, torch.isnan, [a], backend)
    check("isinf", lumen.isinf, torch.isinf, [a], backend)
    check("isfinite", lumen.isfinite, torch.isfinite, [a], backend)


def test_logical_ops(backend):
    a, b = data((4, 5), lumen.bool_, 24), data((5,), lumen.bool_, 25)
    check("logical_and", lambda x, y: x & y, torch.logical_and, [a, b], backend)
    check("logical_or", lambda x, y: x | y, torch.logical_or, [a, b], backend)
    check("logical_xor", lambda x, y: x ^ y, torch.logical_xor, [a, b], backend)
    check("logical_not", lambda x: ~x, torch.logical_not, [a], backend)
    f = np.array([0.0, 2.0, -1.0, np.nan], dtype=np.float32)
    check("logical_not", lumen.logical_not, torch.logical_not, [f], backend)
    check("logical_and", lumen.logical_and, torch.logical_and, [f, f[::-1].copy()], backend)


def test_elementwise_errors():
    g = lumen.Graph()
    a, b = g.input("a", (3, 4)), g.input("b", (5, 4))
    expect_error(lambda: a + b, "add", "[3, 4]", "[5, 4]")
    expect_error(lambda: lumen.where(a > 0, a, b), "where", "[3, 4]", "[5, 4]")
    t = g.input("t", (3,), lumen.bool_)
    expect_error(lambda: -t, "neg", "bool")
    expect_error(lambda: t - t, "sub", "bool")


def test_division_by_subnormal_and_huge(backend):
    # Issue 14 item 4: x / y was x * (1/y), and 1/y overflows for a subnormal y (1e-39 / 1e-39 gave inf).
    a = np.array([1e-39, 1.0, 3e38, 1e-39, 2.5e-39, -7e-40, 1e-45, 3e38, 1.0, 0.0, 1e30, -2.0, 6.0], dtype=np.float32)
    b = np.array([1e-39, 1e-39, 3e38, 3e38, -5e-40, 7e-40, 1e-45, 1e-39, 0.0, 0.0, 2e38, 1e-44, 3.0], dtype=np.float32)
    a, b = np.tile(a, 3), np.tile(b, 3)  # vector lanes and a scalar tail
    check("div", lambda x, y: x / y, torch.div, [a, b], backend, rtol=2e-7, atol=0)


def test_remainder_fmod_by_infinity(backend):
    # Issue 14 item 4: remainder(x, ±inf) gave NaN (y·0 for the sign fix); PyTorch gives x, or ±inf when the
    # signs differ.
    inf = np.inf
    a = np.array([1.0, -1.0, 1.0, -1.0, 0.0, 2.5, -3e38, 7.0, -7.0, inf, np.nan, 1.0], dtype=np.float32)
    b = np.array([inf, inf, -inf, -inf, inf, -inf, inf, 3.0, -3.0, 2.0, inf, np.nan], dtype=np.float32)
    check("remainder", lambda x, y: x % y, torch.remainder, [a, b], backend, exact=True)
    check("fmod", lumen.fmod, torch.fmod, [a, b], backend, exact=True)


def test_floor_divide_by_subnormal(backend):
    a = np.array([1e-39, 3e-39, -5e-39, 7.0, 2.5e-39, 6e-39], dtype=np.float32)
    b = np.array([1e-39, 1e-39, 2e-39, 2.0, -1e-39, 3e-39], dtype=np.float32)
    a, b = np.tile(a, 3), np.tile(b, 3)
    check("floor_divide", lambda x, y: x // y, torch.floor_divide, [a, b], backend, exact=True)
