"""PyTorch's names with PyTorch's meanings (issue 14, items 5b and 5c): each
signature that used to mean something else, checked against PyTorch."""
import numpy as np
import pytest
import torch

import lumen
from harness import check, data, expect_error, run


# ---- std / var: a positional bool is `unbiased` (torch's overload), not a dim ----

@pytest.mark.parametrize("name", ["std", "var"])
@pytest.mark.parametrize("unbiased", [False, True])
def test_std_var_positional_unbiased(backend, name, unbiased):
    x = data((4, 7), seed=3)
    fn, ref = getattr(lumen, name), getattr(torch, name)
    check(name, lambda t: fn(t, unbiased), lambda t: ref(t, unbiased), [x], backend)
    check(name, lambda t: getattr(t, name)(unbiased), lambda t: getattr(t, name)(unbiased), [x], backend)
    check(name, lambda t: fn(t, 1, unbiased, True), lambda t: ref(t, 1, unbiased, True), [x], backend)


def test_std_unbiased_and_correction_together_is_refused():
    g = lumen.Graph()
    x = g.input("x", (3,))
    expect_error(lambda: lumen.std(x, 0, True, correction=0), "unbiased or correction")


# ---- squeeze(x, dim=()) squeezes nothing ----

def test_squeeze_empty_dims_tuple(backend):
    x = data((1, 3, 1), seed=4)
    check("squeeze", lambda t: lumen.squeeze(t, ()), lambda t: torch.squeeze(t, ()), [x], backend)
    check("squeeze", lambda t: t.squeeze(()), lambda t: t.squeeze(()), [x], backend)
    check("squeeze", lambda t: lumen.squeeze(t), lambda t: torch.squeeze(t), [x], backend)
    check("squeeze", lambda t: lumen.squeeze(t, (0, 2)), lambda t: torch.squeeze(t, (0, 2)), [x], backend)


# ---- reductions of empty tensors ----

@pytest.mark.parametrize("name", ["mean", "std", "var", "sum"])
@pytest.mark.parametrize("shape,dim", [((0,), None), ((3, 0), 1), ((0, 4), 0)], ids=str)
def test_reductions_of_empty(backend, name, shape, dim):
    x = np.zeros(shape, np.float32)
    fn, ref = getattr(lumen, name), getattr(torch, name)
    if dim is None:
        check(name, fn, ref, [x], backend)
    else:
        check(name, lambda t: fn(t, dim), lambda t: ref(t, dim), [x], backend)


def test_std_var_with_too_few_elements(backend):
    # torch divides by max(0, n - correction): one element gives NaN, correction past n gives inf.
    x = data((3, 2), seed=5)
    check("var", lambda t: lumen.var(t[:1], 0), lambda t: torch.var(t[:1], 0), [x], backend)
    check("var", lambda t: lumen.var(t, 1, correction=5), lambda t: torch.var(t, 1, correction=5), [x], backend)


@pytest.mark.parametrize("name", ["amax", "amin", "argmax", "argmin", "max", "min"])
def test_max_style_reductions_of_empty_are_refused(name):
    g = lumen.Graph()
    x = g.input("x", (3, 0))
    with pytest.raises(Exception):
        getattr(torch, name)(torch.zeros(3, 0), 1)  # PyTorch refuses these too
    expect_error(lambda: getattr(lumen, name)(x, 1), "size 0")
    expect_error(lambda: getattr(lumen, name)(x), "size 0")
    # Reducing a non-empty axis of an empty tensor is fine (an empty result), as in PyTorch.
    assert tuple(getattr(lumen, name)(x, 0)[0].shape if name in ("max", "min") else getattr(lumen, name)(x, 0).shape) == (0,)


# ---- rank-0 tensors: dim 0 and -1 name their one axis ----

SCALAR_OPS = {
    "sum": (lambda t, d: lumen.sum(t, d), lambda t, d: torch.sum(t, d)),
    "sum_keepdim": (lambda t, d: lumen.sum(t, d, keepdim=True), lambda t, d: torch.sum(t, d, keepdim=True)),
    "mean": (lambda t, d: lumen.mean(t, d), lambda t, d: torch.mean(t, d)),
    "amax": (lambda t, d: lumen.amax(t, d), lambda t, d: torch.amax(t, d)),
    "amin": (lambda t, d: lumen.amin(t, d), lambda t, d: torch.amin(t, d)),
    "prod": (lambda t, d: lumen.prod(t, d), lambda t, d: torch.prod(t, d)),
    "std": (lambda t, d: lumen.std(t, d), lambda t, d: torch.std(t, d)),
    "logsumexp": (lambda t, d: lumen.logsumexp(t, d), lambda t, d: torch.logsumexp(t, d)),
    "softmax": (lambda t, d: lumen.softmax(t, d), lambda t, d: torch.softmax(t, d)),
    "log_softmax": (lambda t, d: lumen.log_softmax(t, d), lambda t, d: torch.log_softmax(t, d)),
    "cumsum": (lambda t, d: lumen.cumsum(t, d), lambda t, d: torch.cumsum(t, d)),
    "argmax": (lambda t, d: lumen.argmax(t, d), lambda t, d: torch.argmax(t, d)),
    "argmin": (lambda t, d: lumen.argmin(t, d), lambda t, d: torch.argmin(t, d)),
    "max": (lambda t, d: lumen.max(t, d), lambda t, d: tuple(torch.max(t, d))),
    "transpose": (lambda t, d: lumen.transpose(t, d, 0), lambda t, d: torch.transpose(t, d, 0)),
    "transpose_method": (lambda t, d: t.transpose(d, d), lambda t, d: t.transpose(d, d)),
    "squeeze": (lambda t, d: lumen.squeeze(t, d), lambda t, d: torch.squeeze(t, d)),
    "sum_method": (lambda t, d: t.sum(d), lambda t, d: t.sum(d)),
}


@pytest.mark.parametrize("name", sorted(SCALAR_OPS))
@pytest.mark.parametrize("dim", [0, -1])
def test_rank0_dim(backend, name, dim):
    fn, ref = SCALAR_OPS[name]
    x = np.array(1.75, np.float32)
    op = name.replace("_keepdim", "").replace("_method", "")
    op = {"max": "amax"}.get(op, op)  # the registry's amax entry is torch.amax / torch.max
    check(op, lambda t: fn(t, dim), lambda t: ref(t, dim), [x],
          backend)


def test_rank0_dim_out_of_range_is_refused():
    g = lumen.Graph()
    s = g.input("s", ())
    expect_error(lambda: lumen.sum(s, 1), "out of range")
    expect_error(lambda: lumen.softmax(s, 2), "out of range")


# ---- list indices ----

@pytest.mark.parametrize("key", [[1, 2], [2, 0, 2], [-1, 0], [3], [0, 1, 2, 3]], ids=str)
def test_list_index(backend, key):
    x = data((4, 5), seed=6)
    check("index", lambda t: t[key], lambda t: t[key], [x], backend)
    check("index", lambda t: t[:, key], lambda t: t[:, key], [x], backend)


def test_nested_list_index(backend):
    x = data((4, 5), seed=7)
    key = [[0, 3], [2, 2]]
    check("index", lambda t: t[:, key], lambda t: t[:, key], [x], backend)  # a 2-d index into dim 1
    check("index", lambda t: t[(key,)], lambda t: t[(key,)], [x], backend)


def test_nested_list_as_whole_index_is_refused():
    # PyTorch reads x[[[0, 3], [2, 2]]] as x[[0, 3], [2, 2]] (one index per axis, paired).
    g = lumen.Graph()
    x = g.input("x", (4, 5))
    expect_error(lambda: x[[[0, 3], [2, 2]]], "nested list")


def test_list_index_out_of_range_and_pairs_are_refused():
    g = lumen.Graph()
    x = g.input("x", (4, 5))
    with pytest.raises(IndexError):
        x[[4]]
    with pytest.raises(IndexError):
        x[[0, -5]]
    expect_error(lambda: x[[0, 1], [1, 2]], "more than one index")
    expect_error(lambda: x[[True, False, True, False]], "boolean mask")
