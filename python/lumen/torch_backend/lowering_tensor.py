"""Lowerings of reductions, softmax and movement ATen ops (see lowering.py)."""
from __future__ import annotations

import numbers

import torch

from .. import _functions as F
from .. import _lumen
from .lowering import _as, lowers
from .values import Unsupported

aten = torch.ops.aten
Tensor = _lumen.Tensor
_ops = _lumen.ops
_INT64_MAX = 2 ** 63 - 1


def _dims(dim):
    if dim is None:
        return []
    if isinstance(dim, numbers.Integral):
        return [int(dim)]
    return [int(d) for d in dim]


def _to(ctx, x):
    return _as(ctx, x, ctx.out_dtype)


# ---- reductions (`dtype=` is the node's output dtype; dims [] or None mean all)

@lowers(aten.sum.dim_IntList, aten.sum.default)
def _sum(ctx, x, dim=None, keepdim=False, dtype=None):
    return F.sum(_to(ctx, x), _dims(dim) or None, keepdim)


@lowers(aten.mean.dim, aten.mean.default)
def _mean(ctx, x, dim=None, keepdim=False, dtype=None):
    return F.mean(_to(ctx, x), _dims(dim) or None, keepdim)


@lowers(aten.amax.default, aten.amin.default)
def _amax(ctx, x, dim=(), keepdim=False):
    fn = F.amax if ctx.node.target is aten.amax.default else F.amin
    return fn(x, _dims(dim) or None, keepdim)


@lowers(aten.max.dim, aten.min.dim)
def _max_dim(ctx, x, dim, keepdim=False):
    """(values, indices): the values only (the int64 indices need lumen's int64; the node is refused if used)."""
    fn = F.amax if ctx.node.target is aten.max.dim else F.amin
    return fn(x, dim, keepdim), None


@lowers(aten.prod.dim_int, aten.prod.default)
def _prod(ctx, x, dim=None, keepdim=False, dtype=None):
    return F.prod(_to(ctx, x), dim, keepdim)


@lowers(aten.var.correction, aten.std.correction)
def _var(ctx, x, dim=None, correction=None, keepdim=False):
    fn = F.var if ctx.node.target is aten.var.correction else F.std
    return fn(x, _dims(dim) or None, keepdim=keepdim, correction=1 if correction is None else correction)


@lowers(aten.logsumexp.default)
def _logsumexp(ctx, x, dim, keepdim=False):
    return F.logsumexp(x, _dims(dim), keepdim)


@lowers(aten.any.dim, aten.any.dims, aten.any.default, aten.all.dim, aten.all.dims, aten.all.default)
def _any(ctx, x, dim=None, keepdim=False):
    fn = F.any if ctx.node.target in (aten.any.dim, aten.any.dims, aten.any.default) else F.all
    return fn(_as(ctx, x, _lumen.DType.bool), _dims(dim) or None, keepdim)


@lowers(aten.cumsum.default, aten.cumprod.default)
def _cumsum(ctx, x, dim, dtype=None):
    fn = F.cumsum if ctx.node.target is aten.cumsum.default else F.cumprod
    return fn(_to(ctx, x), dim)


@lowers(aten.argmax.default, aten.argmin.default)
def _argmax(ctx, x, dim=None, keepdim=False):
    fn = F.argmax if ctx.node.target is aten.argmax.default else F.argmin
    return _to(ctx, fn(x, dim, keepdim))  # int64 output: only once lumen has int64


@lowers(aten._softmax.default, aten._log_softmax.default, aten.softmax.int, aten.log_softmax.int)
def _softmax(ctx, x, dim, half_to_float=False):
    fn = F.softmax if ctx.node.target in (aten._softmax.default, aten.softmax.int) else F.log_softmax
    if isinstance(half_to_float, bool):
        return fn(_to(ctx, x), dim)
    return fn(_to(ctx, x), dim)  # softmax.int's third argument is a dtype: the output dtype already says it


# ---- movement: the output shape comes from torch's example value, so -1 and
# symbolic sizes need no re-deriving

@lowers(aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.squeeze.dim, aten.squeeze.dims,
        aten.squeeze.default)
def _view(ctx, x, *shape):
    return x.reshape_(ctx.out_shape())


@lowers(aten.expand.default)
def _expand(ctx, x, size, implicit=False):
    return x.expand_(ctx.out_shape())


@lowers(aten.permute.default)
def _permute(ctx, x, dims):
    return x.permute_([int(d) for d in dims])


@lowers(aten.transpose.int)
def _transpose(ctx, x, a, b):
    return F.transpose(x, a, b)


@lowers(aten.t.default)
def _t(ctx, x):
    return F.transpose(x, 0, 1) if x.ndim == 2 else x


@lowers(aten.unsqueeze.default)
def _unsqueeze(ctx, x, dim):
    return x.unsqueeze(dim)


def _clamp_index(v, size, default):
    if v is None:
        return default
    if isinstance(v, numbers.Integral):
        if isinstance(size, int):
            v = int(v)
            if v < 0:
                v += size
            return max(0, min(v, size))
        if v >= _INT64_MAX // 2:
            return size
        if v < 0:
            return size + int(v)
        return int(v)
    return v  # a Dim: torch has already checked it is in range


@lowers(aten.slice.Tensor)
def _slice(ctx, x, dim=0, start=None, end=None, step=1):
    dim = dim % x.ndim
    size = x.shape[dim]
    b = _clamp_index(start, size, 0)
    e = _clamp_index(end, size, size)
    if isinstance(b, int) and isinstance(e, int) and e <= b:
        e = b
    return x.slice_(dim, b, e, int(step))


@lowers(aten.select.int)
def _select(ctx, x, dim, index):
    dim = dim % x.ndim
    if not isinstance(index, numbers.Integral):
        raise Unsupported("select with a symbolic index")
    if index < 0:
        index = x.shape[dim] + index
    return x.slice_(dim, index, index + 1, 1).reshape_(ctx.out_shape())


@lowers(aten.cat.default)
def _cat(ctx, tensors, dim=0):
    # torch skips 1-d empty tensors in cat (legacy behaviour, e.g. an empty KV cache)
    kept = [t for t in tensors if not (t.ndim == 1 and isinstance(t.shape[0], int) and t.shape[0] == 0)]
    if not kept:
        raise Unsupported("cat of empty tensors only")
    if len(kept) == 1:
        return kept[0]
    d = ctx.out_dtype
    return _ops.concat([_as(ctx, t, d) for t in kept], dim % kept[0].ndim)


@lowers(aten.stack.default)
def _stack(ctx, tensors, dim=0):
    return _ops.stack(list(tensors), dim)


def _pieces(ctx, x, sizes, dim):
    dim = dim % x.ndim
    out, at = [], 0
    for s in sizes:
        out.append(x.slice_(dim, at, at + s, 1))
        at = at + s
    return out


@lowers(aten.split_with_sizes.default)
def _split_with_sizes(ctx, x, sizes, dim=0):
    return _pieces(ctx, x, sizes, dim)


@lowers(aten.split.Tensor)
def _split(ctx, x, size, dim=0):
    return _pieces(ctx, x, [ctx.dims.dim(o.shape[dim]) for o in ctx.out], dim)


@lowers(aten.unbind.int)
def _unbind(ctx, x, dim=0):
    dim = dim % x.ndim
    return [p.reshape_(ctx.out_shape(i)) for i, p in enumerate(_pieces(ctx, x, [1] * len(ctx.out), dim))]


@lowers(aten.constant_pad_nd.default)
def _pad(ctx, x, pad, value=0.0):
    if any(not isinstance(p, numbers.Integral) for p in pad):
        raise Unsupported("padding by symbolic amounts")
    return _ops.pad(x, [int(p) for p in pad], "constant", float(value))


@lowers(aten.flip.default)
def _flip(ctx, x, dims):
    return F.flip(x, dims)


@lowers(aten.roll.default)
def _roll(ctx, x, shifts, dims=()):
    return F.roll(x, shifts, list(dims) or None)


@lowers(aten.repeat.default)
def _repeat(ctx, x, repeats):
    return _ops.repeat(x, [int(r) for r in repeats])


@lowers(aten.tril.default, aten.triu.default)
def _tril(ctx, x, diagonal=0):
    return (F.tril if ctx.node.target is aten.tril.default else F.triu)(x, diagonal)


# ---- indexing (index tensors must be int32 until lumen has int64)

@lowers(aten.index_select.default)
def _index_select(ctx, x, dim, index):
    return _ops.index_select(x, dim, index)


@lowers(aten.gather.default)
def _gather(ctx, x, dim, index, sparse_grad=False):
    return _ops.gather(x, dim, index)


@lowers(aten.embedding.default)
def _embedding(ctx, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return _ops.embedding(indices, weight)
