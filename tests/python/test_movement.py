"""Shape and layout ops against PyTorch."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import lumen
import lumen.nn.functional as F
from harness import FLOATS, Input, check, data, expect_error


@pytest.mark.parametrize("layout", ["contiguous", "permuted", "sliced"])
def test_reshape_view_flatten(backend, layout):
    x = Input(data((4, 6, 5), seed=1), layout=layout)
    check("reshape", lambda t: t.reshape(2, -1, 3), lambda t: t.reshape(2, -1, 3), [x], backend)
    check("view", lambda t: t.view(24, 5), lambda t: t.reshape(24, 5), [x], backend)
    check("flatten", lambda t: lumen.flatten(t), lambda t: torch.flatten(t), [x], backend)
    check("flatten", lambda t: t.flatten(1), lambda t: t.flatten(1), [x], backend)
    check("flatten", lambda t: lumen.flatten(t, 0, -2), lambda t: torch.flatten(t, 0, -2), [x], backend)


def test_permute_transpose_squeeze_unsqueeze(backend):
    x = data((3, 1, 4, 1), seed=2)
    check("permute", lambda t: t.permute(2, 0, 3, 1), lambda t: t.permute(2, 0, 3, 1), [x], backend)
    check("permute", lambda t: t.permute(-1, -2, -3, -4), lambda t: t.permute(-1, -2, -3, -4), [x], backend)
    check("transpose", lambda t: t.transpose(0, 2), lambda t: t.transpose(0, 2), [x], backend)
    check("squeeze", lambda t: t.squeeze(), lambda t: t.squeeze(), [x], backend)
    check("squeeze", lambda t: t.squeeze(1), lambda t: t.squeeze(1), [x], backend)
    check("squeeze", lambda t: t.squeeze(0), lambda t: t.squeeze(0), [x], backend)  # not size 1: unchanged
    check("unsqueeze", lambda t: t.unsqueeze(-1), lambda t: t.unsqueeze(-1), [x], backend)
    check("unsqueeze", lambda t: t.unsqueeze(0), lambda t: t.unsqueeze(0), [x], backend)


def test_expand_broadcast_to(backend):
    x = data((3, 1), seed=3)
    check("expand", lambda t: t.expand(2, 3, 4), lambda t: t.expand(2, 3, 4), [x], backend)
    check("expand", lambda t: t.expand(-1, 5), lambda t: t.expand(-1, 5), [x], backend)
    check("broadcast_to", lambda t: lumen.broadcast_to(t, (4, 3, 7)), lambda t: torch.broadcast_to(t, (4, 3, 7)), [x], backend)


def test_slicing_and_indexing_python_semantics(backend):
    x = Input(data((7, 9, 5), seed=4), layout="permuted")
    cases = [
        lambda t: t[1:5], lambda t: t[-3:], lambda t: t[:, ::2], lambda t: t[..., 1:4:2], lambda t: t[2],
        lambda t: t[-1, 3], lambda t: t[None, 1:3, None], lambda t: t[:, -100:100], lambda t: t[5:2],
        lambda t: t[1::3, 2:, -2],
    ]
    for fn in cases:
        check("slice", fn, fn, [x], backend)
    check("narrow", lambda t: t.narrow(1, 2, 4), lambda t: t.narrow(1, 2, 4), [x], backend)
    check("narrow", lambda t: lumen.narrow(t, -1, -3, 2), lambda t: torch.narrow(t, -1, -3, 2), [x], backend)


def test_integer_tensor_index(backend):
    x = data((6, 4), seed=5)
    idx = np.array([[5, 0], [2, 2]], dtype=np.int32)
    check("index", lambda t, i: t[i], lambda t, i: t[i.long()], [x, idx], backend)
    check("index", lambda t, i: t[:, i], lambda t, i: t[:, i.long()], [x, idx % 4], backend)


def test_flip_roll(backend):
    x = data((4, 5, 3), seed=6)
    check("flip", lambda t: t.flip(0), lambda t: t.flip(0), [x], backend)
    check("flip", lambda t: lumen.flip(t, (0, 2)), lambda t: torch.flip(t, (0, 2)), [x], backend)
    check("roll", lambda t: lumen.roll(t, 2, 1), lambda t: torch.roll(t, 2, 1), [x], backend)
    check("roll", lambda t: lumen.roll(t, (-1, 7), (0, 2)), lambda t: torch.roll(t, (-1, 7), (0, 2)), [x], backend)
    check("roll", lambda t: lumen.roll(t, 3), lambda t: torch.roll(t, 3), [x], backend)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_stack_split_chunk(backend, dim):
    a, b, c = data((3, 4), seed=7), data((3, 4), seed=8), data((3, 4), seed=9)
    check("concat", lambda x, y, z: lumen.cat([x, y, z], dim), lambda x, y, z: torch.cat([x, y, z], dim), [a, b, c], backend)
    check("stack", lambda x, y: lumen.stack([x, y], dim), lambda x, y: torch.stack([x, y], dim), [a, b], backend)
    check("split", lambda x: lumen.split(x, 2, dim), lambda x: torch.split(x, 2, dim), [a], backend)
    check("split", lambda x: lumen.split(x, [1, 2], 0), lambda x: torch.split(x, [1, 2], 0), [a], backend)
    check("chunk", lambda x: lumen.chunk(x, 2, dim), lambda x: torch.chunk(x, 2, dim), [a], backend)


def test_cat_mixed_sizes_and_dtypes(backend):
    a, b = data((2, 3), seed=10), data((5, 3), lumen.int32, 11)
    check("concat", lambda x, y: lumen.cat([x, y]), lambda x, y: torch.cat([x, y.float()]), [a, b], backend)
    inf = np.array([np.inf, -np.inf, np.nan], dtype=np.float32)
    check("concat", lambda x: lumen.cat([x, x], 0), lambda x: torch.cat([x, x], 0), [inf], backend)


def test_repeat_tile(backend):
    x = Input(data((2, 3), seed=12), layout="permuted")
    check("repeat", lambda t: t.repeat(2, 3), lambda t: t.repeat(2, 3), [x], backend)
    check("repeat", lambda t: t.repeat(2, 1, 2), lambda t: t.repeat(2, 1, 2), [x], backend)
    check("tile", lambda t: lumen.tile(t, (3,)), lambda t: torch.tile(t, (3,)), [x], backend)
    check("tile", lambda t: lumen.tile(t, (2, 2, 1)), lambda t: torch.tile(t, (2, 2, 1)), [x], backend)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate"])
def test_pad_modes(backend, mode):
    x = data((2, 3, 5, 6), seed=13)
    x3 = data((3, 5, 6), seed=16)
    check("pad", lambda t: F.pad(t, (1, 2), mode), lambda t: TF.pad(t, (1, 2), mode), [x3], backend)
    check("pad", lambda t: F.pad(t, (2, 0, 1, 3), mode), lambda t: TF.pad(t, (2, 0, 1, 3), mode), [x], backend)


def test_pad_values_and_negative(backend):
    x = data((3, 4), seed=14)
    check("pad", lambda t: F.pad(t, (1, 1, 2, 0), value=2.5), lambda t: TF.pad(t, (1, 1, 2, 0), value=2.5), [x], backend)
    check("pad", lambda t: F.pad(t, (1, 1), value=float("-inf")), lambda t: TF.pad(t, (1, 1), value=float("-inf")), [x], backend)
    check("pad", lambda t: F.pad(t, (-1, 2, 0, -2)), lambda t: TF.pad(t, (-1, 2, 0, -2)), [x], backend)


@pytest.mark.parametrize("dtype", FLOATS + [lumen.int32, lumen.bool_], ids=lambda d: d.name)
def test_movement_preserves_every_dtype(backend, dtype):
    x = Input(data((3, 4), dtype, 15), dtype)
    check("transpose", lambda t: t.T, lambda t: t.T, [x], backend, exact=True)
    check("concat", lambda t: lumen.cat([t, t[:1]], 0), lambda t: torch.cat([t, t[:1]], 0), [x], backend, exact=True)
    check("flip", lambda t: t.flip(1), lambda t: t.flip(1), [x], backend, exact=True)


def test_movement_errors():
    g = lumen.Graph()
    x = g.input("x", (3, 4))
    expect_error(lambda: x.reshape(5, 2), "reshape", "[3, 4]", "[5, 2]")
    expect_error(lambda: x.reshape(-1, -1), "reshape", "-1")
    expect_error(lambda: x.permute(0, 0), "permute")
    expect_error(lambda: x.expand(3, 5), "expand")
    expect_error(lambda: lumen.cat([x, g.input("y", (3, 5))], 0), "concat", "[3, 4]", "[3, 5]")
    expect_error(lambda: F.pad(x, (4, 0), "reflect"), "reflect")
    expect_error(lambda: F.pad(x, (1,)), "pad")
    expect_error(lambda: lumen.split(x, [1, 1], 0), "split", "add up to 2")
    expect_error(lambda: x.transpose(0, 2), "transpose", "axis 2")
