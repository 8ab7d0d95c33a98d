"""Gradients of the op library against torch.autograd (lumen.grad, reverse-mode
autodiff as a graph transform), driven by one table: op name (as in
lumen/ops/registry.cpp), the lumen function, the torch function, and the
inputs. Inputs stay away from kinks (abs, relu, max ties) where derivatives
are one-sided; integer inputs (indices, targets) get no gradient."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import lumen
import lumen.nn.functional as F
from grad_harness import grad_check
from harness import Input, data


def pos(shape, seed):
    return data(shape, seed=seed, low=0.5, high=2.5)


def distinct(shape, seed):  # no ties for max/min/sort-like ops
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n).astype(np.float32) / n * 6 - 3).reshape(shape)


def idx(shape, high, seed):
    return Input(np.random.default_rng(seed).integers(0, high, size=shape).astype(np.int32))


X = data((3, 5), seed=1)
Y = data((3, 5), seed=2)
X3 = data((2, 3, 4), seed=3)

CASES = [
    # arithmetic
    ("add", lambda a, b: a + b, lambda a, b: a + b, [X, data((5,), seed=4)]),
    ("sub", lambda a, b: a - b, lambda a, b: a - b, [X, data((3, 1), seed=5)]),
    ("mul", lambda a, b: a * b, lambda a, b: a * b, [X, Y]),
    ("div", lambda a, b: a / b, lambda a, b: a / b, [X, pos((3, 5), 6)]),
    ("remainder", lambda a, b: lumen.remainder(a, b), torch.remainder, [X, pos((3, 5), 7)]),
    ("fmod", lambda a, b: lumen.fmod(a, b), torch.fmod, [X, pos((3, 5), 8)]),
    ("pow", lambda a, b: lumen.pow(a, b), torch.pow, [pos((3, 5), 9), Y]),
    ("pow", lambda a: lumen.pow(a, 3), lambda a: torch.pow(a, 3), [X]),
    ("neg", lumen.neg, torch.neg, [X]),
    ("abs", lumen.abs, torch.abs, [X]),
    ("sign", lumen.sign, torch.sign, [X]),
    ("minimum", lumen.minimum, torch.minimum, [X, Y]),
    ("maximum", lumen.maximum, torch.maximum, [X, Y]),
    ("clamp", lambda a: lumen.clamp(a, -1.0, 1.5), lambda a: torch.clamp(a, -1.0, 1.5), [X]),
    ("where", lambda c, a, b: lumen.where(c, a, b), torch.where, [Input(data((3, 5), lumen.bool_, 10)), X, Y]),
    # math and activations
    ("exp", lumen.exp, torch.exp, [X]),
    ("log", lumen.log, torch.log, [pos((3, 5), 11)]),
    ("exp2", lumen.exp2, torch.exp2, [X]),
    ("log2", lumen.log2, torch.log2, [pos((3, 5), 12)]),
    ("log10", lumen.log10, torch.log10, [pos((3, 5), 13)]),
    ("sqrt", lumen.sqrt, torch.sqrt, [pos((3, 5), 14)]),
    ("rsqrt", lumen.rsqrt, torch.rsqrt, [pos((3, 5), 15)]),
    ("reciprocal", lumen.reciprocal, torch.reciprocal, [pos((3, 5), 16)]),
    ("sin", lumen.sin, torch.sin, [X]),
    ("cos", lumen.cos, torch.cos, [X]),
    ("tan", lumen.tan, torch.tan, [data((3, 5), seed=17, low=-1.2, high=1.2)]),
    ("tanh", lumen.tanh, torch.tanh, [X]),
    ("erf", lumen.erf, torch.erf, [X]),
    ("sigmoid", lumen.sigmoid, torch.sigmoid, [X]),
    ("relu", lumen.relu, torch.relu, [X]),
    ("leaky_relu", lambda a: F.leaky_relu(a, 0.1), lambda a: TF.leaky_relu(a, 0.1), [X]),
    ("gelu", F.gelu, TF.gelu, [X]),
    ("gelu", lambda a: F.gelu(a, approximate="tanh"), lambda a: TF.gelu(a, approximate="tanh"), [X]),
    ("silu", F.silu, TF.silu, [X]),
    ("softplus", F.softplus, TF.softplus, [X]),
    ("mish", F.mish, TF.mish, [X]),
    ("floor", lumen.floor, torch.floor, [X]),
    ("ceil", lumen.ceil, torch.ceil, [X]),
    ("round", lumen.round, torch.round, [X]),
    ("trunc", lumen.trunc, torch.trunc, [X]),
    # reductions
    ("sum", lambda a: lumen.sum(a, 1), lambda a: torch.sum(a, 1), [X3]),
    ("mean", lambda a: lumen.mean(a, (0, 2)), lambda a: torch.mean(a, (0, 2)), [X3]),
    ("amax", lambda a: lumen.amax(a, 1), lambda a: torch.amax(a, 1), [distinct((2, 3, 4), 18)]),
    ("amax", lambda a: lumen.amax(a), lambda a: torch.amax(a), [np.array([[1, 3, 3], [0, 3, 2]], np.float32)]),
    ("amin", lambda a: lumen.amin(a, -1), lambda a: torch.amin(a, -1), [distinct((2, 3, 4), 19)]),
    ("prod", lambda a: lumen.prod(a, 1), lambda a: torch.prod(a, 1), [X3]),
    ("var", lambda a: lumen.var(a, 2), lambda a: torch.var(a, 2), [X3]),
    ("std", lambda a: lumen.std(a, 1), lambda a: torch.std(a, 1), [X3]),
    ("logsumexp", lambda a: lumen.logsumexp(a, 1), lambda a: torch.logsumexp(a, 1), [X3]),
    ("cumsum", lambda a: lumen.cumsum(a, 1), lambda a: torch.cumsum(a, 1), [X3]),
    ("cumprod", lambda a: lumen.cumprod(a, 2), lambda a: torch.cumprod(a, 2), [X3]),
    ("softmax", lambda a: lumen.softmax(a, -1), lambda a: torch.softmax(a, -1), [X3]),
    ("log_softmax", lambda a: lumen.log_softmax(a, 1), lambda a: torch.log_softmax(a, 1), [X3]),
    # movement
    ("reshape", lambda a: a.reshape(4, 6), lambda a: a.reshape(4, 6), [X3]),
    ("view", lambda a: a.view(6, 4), lambda a: a.view(6, 4), [X3]),
    ("permute", lambda a: a.permute(2, 0, 1), lambda a: a.permute(2, 0, 1), [X3]),
    ("transpose", lambda a: a.transpose(0, 2), lambda a: a.transpose(0, 2), [Input(X3, layout="permuted")]),
    ("expand", lambda a: a.expand(4, 3, 5), lambda a: a.expand(4, 3, 5), [data((3, 1), seed=20)]),
    ("broadcast_to", lambda a: lumen.broadcast_to(a, (2, 3, 5)), lambda a: torch.broadcast_to(a, (2, 3, 5)), [X]),
    ("squeeze", lambda a: lumen.squeeze(a, 1), lambda a: torch.squeeze(a, 1), [data((3, 1, 4), seed=21)]),
    ("unsqueeze", lambda a: lumen.unsqueeze(a, 1), lambda a: torch.unsqueeze(a, 1), [X]),
    ("flatten", lambda a: lumen.flatten(a, 1), lambda a: torch.flatten(a, 1), [X3]),
    ("slice", lambda a: a[1:, ::2, None], lambda a: a[1:, ::2, None], [Input(X3, layout="sliced")]),
    ("index", lambda a, i: a[i], lambda a, i: a[i.long()], [X, idx((4,), 3, 22)]),
    ("narrow", lambda a: lumen.narrow(a, 1, 1, 3), lambda a: torch.narrow(a, 1, 1, 3), [X]),
    ("pad", lambda a: F.pad(a, (1, 2, 0, 1)), lambda a: TF.pad(a, (1, 2, 0, 1)), [X]),
    ("pad", lambda a: F.pad(a, (2, 1), "reflect"), lambda a: TF.pad(a, (2, 1), "reflect"), [X3]),
    ("pad", lambda a: F.pad(a, (2, 1), "replicate"), lambda a: TF.pad(a, (2, 1), "replicate"), [X3]),
    ("concat", lambda a, b: lumen.cat([a, b], 0), lambda a, b: torch.cat([a, b], 0), [X, Y]),
    ("stack", lambda a, b: lumen.stack([a, b], 1), lambda a, b: torch.stack([a, b], 1), [X, Y]),
    ("split", lambda a: lumen.split(a, 2, 1), lambda a: torch.split(a, 2, 1), [X]),
    ("chunk", lambda a: lumen.chunk(a, 2, 0), lambda a: torch.chunk(a, 2, 0), [X]),
    ("repeat", lambda a: a.repeat(2, 1, 3), lambda a: a.repeat(2, 1, 3), [X]),
    ("tile", lambda a: lumen.tile(a, (2, 2)), lambda a: torch.tile(a, (2, 2)), [X]),
    ("flip", lambda a: lumen.flip(a, (0, 2)), lambda a: torch.flip(a, (0, 2)), [X3]),
    ("roll", lambda a: lumen.roll(a, 2, 1), lambda a: torch.roll(a, 2, 1), [X]),
    # indexing
    ("gather", lambda a, i: lumen.gather(a, 1, i), lambda a, i: torch.gather(a, 1, i.long()), [X, idx((3, 7), 5, 23)]),
    ("index_select", lambda a, i: lumen.index_select(a, 0, i), lambda a, i: torch.index_select(a, 0, i.long()),
     [X, idx((5,), 3, 24)]),
    ("embedding", lambda i, w: F.embedding(i, w), lambda i, w: TF.embedding(i.long(), w), [idx((2, 6), 7, 25), data((7, 4), seed=26)]),
    ("take_along_dim", lambda a, i: lumen.take_along_dim(a, i, 1), lambda a, i: torch.take_along_dim(a, i.long(), 1),
     [X, idx((3, 2), 5, 27)]),
    # linear algebra
    ("matmul", lumen.matmul, torch.matmul, [X3, data((4, 6), seed=28)]),
    ("bmm", lumen.bmm, torch.bmm, [X3, data((2, 4, 3), seed=29)]),
    ("linear", F.linear, TF.linear, [X3, data((5, 4), seed=30), data((5,), seed=31)]),
    ("einsum", lambda a, b: lumen.einsum("bij,jk->bki", a, b), lambda a, b: torch.einsum("bij,jk->bki", a, b),
     [X3, data((4, 2), seed=32)]),
    ("outer", lumen.outer, torch.outer, [data((3,), seed=33), data((4,), seed=34)]),
    # creation (of an input)
    ("tril", lambda a: lumen.tril(a, 1), lambda a: torch.tril(a, 1), [X]),
    ("triu", lambda a: lumen.triu(a), lambda a: torch.triu(a), [X]),
    # nn functional
    ("layer_norm", lambda a, w, b: F.layer_norm(a, (4,), w, b), lambda a, w, b: TF.layer_norm(a, (4,), w, b),
     [X3, data((4,), seed=35), data((4,), seed=36)]),
    ("rms_norm", lambda a, w: F.rms_norm(a, (4,), w, 1e-6), lambda a, w: TF.rms_norm(a, (4,), w, 1e-6), [X3, data((4,), seed=37)]),
    ("group_norm", lambda a, w, b: F.group_norm(a, 2, w, b), lambda a, w, b: TF.group_norm(a, 2, w, b),
     [data((2, 4, 3, 2), seed=38), data((4,), seed=39), data((4,), seed=40)]),
    ("batch_norm", lambda a, m, v, w, b: F.batch_norm(a, m, v, w, b), lambda a, m, v, w, b: TF.batch_norm(a, m, v, w, b),
     [data((2, 3, 4), seed=41), data((3,), seed=42), pos((3,), 43), data((3,), seed=44), data((3,), seed=45)],
     {"wrt": [0, 3, 4]}),  # torch has no gradient for the running statistics
    ("dropout", lambda a: F.dropout(a, 0.3, training=False), lambda a: TF.dropout(a, 0.3, training=False), [X]),
    ("conv1d", lambda a, w, b: F.conv1d(a, w, b, 2, 1), lambda a, w, b: TF.conv1d(a, w, b, 2, 1),
     [data((2, 3, 9), seed=46), data((4, 3, 3), seed=47), data((4,), seed=48)]),
    ("conv2d", lambda a, w, b: F.conv2d(a, w, b, 1, 1), lambda a, w, b: TF.conv2d(a, w, b, 1, 1),
     [data((1, 2, 6, 5), seed=49), data((3, 2, 3, 3), seed=50), data((3,), seed=51)]),
    ("conv_transpose2d", lambda a, w, b: F.conv_transpose2d(a, w, b, 2, 1),
     lambda a, w, b: TF.conv_transpose2d(a, w, b, 2, 1),
     [data((1, 2, 4, 3), seed=52), data((2, 3, 3, 3), seed=53), data((3,), seed=54)]),
    ("max_pool2d", lambda a: F.max_pool2d(a, 2), lambda a: TF.max_pool2d(a, 2), [distinct((1, 2, 4, 6), 55)]),
    ("avg_pool2d", lambda a: F.avg_pool2d(a, 2, 1), lambda a: TF.avg_pool2d(a, 2, 1), [data((1, 2, 4, 5), seed=56)]),
    ("adaptive_avg_pool2d", lambda a: F.adaptive_avg_pool2d(a, (2, 3)), lambda a: TF.adaptive_avg_pool2d(a, (2, 3)),
     [data((1, 2, 5, 7), seed=57)]),
    ("interpolate", lambda a: F.interpolate(a, None, 2.0, "bilinear", False),
     lambda a: TF.interpolate(a, None, 2.0, "bilinear", False), [data((1, 2, 3, 4), seed=58)]),
    ("interpolate", lambda a: F.interpolate(a, (5, 6), None, "nearest", None),
     lambda a: TF.interpolate(a, (5, 6), None, "nearest", None), [data((1, 2, 3, 4), seed=59)]),
    ("scaled_dot_product_attention", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True),
     [data((1, 2, 5, 4), seed=60), data((1, 2, 5, 4), seed=61), data((1, 2, 5, 4), seed=62)]),
    ("cross_entropy", lambda a, t: F.cross_entropy(a, t), lambda a, t: TF.cross_entropy(a, t.long()), [X, idx((3,), 5, 63)]),
    ("mse_loss", F.mse_loss, TF.mse_loss, [X, Y]),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_gradient_matches_torch(backend, case):
    op, fn, torch_fn, inputs = case[:4]
    grad_check(op, fn, torch_fn, inputs, backend, **(case[4] if len(case) > 4 else {}))


def test_gradient_of_unused_input_is_zero(backend):
    grad_check("mul", lambda a, b: a * 2.0, lambda a, b: a * 2.0, [X, Y], backend)


def test_gradient_errors():
    g = lumen.Graph()
    x = g.input("x", (2, 3))
    i = g.input("i", (2,), lumen.int32)
    with pytest.raises(lumen.Error, match="must be a scalar"):
        lumen.grad(x * 2.0, [x])
    with pytest.raises(lumen.Error, match="only float tensors"):
        lumen.grad(lumen.sum(x), [i])
