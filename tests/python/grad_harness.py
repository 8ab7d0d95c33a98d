"""Checks lumen's gradients (lumen.grad: reverse-mode autodiff as a graph
transform) against torch.autograd: the op's outputs are weighted by fixed
random tensors and summed into a scalar loss, whose gradients with respect to
every float input are compared. Records what was checked for docs/ops.md's
gradient column (conftest writes GRAD_COVERAGE as "grad:<op>" entries)."""
from __future__ import annotations

import numpy as np
import torch

import lumen
from harness import Input, _as_input, _declare, _describe, to_torch

GRAD_CURRENT: dict[str, set] = {}  # ops whose gradients the running test checked -> case descriptions


def _weights(shape, seed):
    return np.random.default_rng(1000 + seed).uniform(-1, 1, size=shape).astype(np.float32)


def grad_check(op, fn, torch_fn, inputs, backend="interp", rtol=1e-4, atol=1e-4, wrt=None):
    """Gradients of sum_i(fn(*inputs)[i] * W_i) w.r.t. the float inputs (or the indices in `wrt`)."""
    inputs = [_as_input(x) for x in inputs]
    wrt = [i for i, x in enumerate(inputs) if x.dtype == lumen.float32] if wrt is None else wrt
    g = lumen.Graph()
    tensors, feeds = [], {}
    for i, inp in enumerate(inputs):
        t, stored = _declare(g, f"in{i}", inp)
        tensors.append(t)
        feeds[f"in{i}"] = stored
    out = fn(*tensors)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    weights = [_weights(tuple(o.shape), k) for k, o in enumerate(outs)]
    loss = None
    for k, o in enumerate(outs):
        w = g.input(f"w{k}", tuple(o.shape))
        term = lumen.sum(o * w)
        loss = term if loss is None else loss + term
    grads = lumen.grad(loss, [tensors[i] for i in wrt])
    program = lumen.compile(g, [loss] + list(grads), backend=backend)
    for name, value in feeds.items():
        program.set(name, value)
    for k, w in enumerate(weights):
        program.set(f"w{k}", w)
    program.run()
    got = [program.get(t) for t in grads]

    leaves = [to_torch(x.array, x.dtype) for x in inputs]
    for i in wrt:
        leaves[i] = leaves[i].clone().requires_grad_(True)
    expected = torch_fn(*leaves)
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    t_loss = sum((e * torch.from_numpy(w)).sum() for e, w in zip(expected, weights))
    t_grads = torch.autograd.grad(t_loss, [leaves[i] for i in wrt], allow_unused=True)
    GRAD_CURRENT.setdefault(op, set()).add(_describe(inputs))  # recorded first, so a failure counts as one
    for i, mine, theirs in zip(wrt, got, t_grads):
        want = np.zeros(inputs[i].array.shape, np.float32) if theirs is None else theirs.detach().numpy()
        scale = max(1.0, float(np.abs(want).max(initial=0.0)))
        np.testing.assert_allclose(np.asarray(mine, np.float64), want.astype(np.float64), rtol=rtol, atol=atol * scale,
                                   err_msg=f"{op}: gradient of input {i}")


__all__ = ["grad_check", "GRAD_CURRENT", "Input"]
