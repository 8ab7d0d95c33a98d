"""Operators and PyTorch-named methods on lumen.Tensor, creation methods on
lumen.Graph, and Program conveniences. Installed once on import."""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from ._lumen import Dim, Error, Graph, Program, Tensor
from ._lumen import ops as _ops
from . import _convert
from . import _functions as F


def _reflected(fn):
    return lambda self, other: fn(other, self)


def _list_index(x: Tensor, values, dim: int) -> Tensor:
    """A list of ints (nested for a multi-dim index) as a constant i32 index tensor into `dim` of `x`."""
    array = np.asarray(values)
    if array.dtype == np.bool_:
        raise Error("boolean mask indexing gives a data-dependent shape; use where() instead")
    if array.size and array.dtype.kind not in "iu":
        raise IndexError(f"list indices must be integers, got {values!r}")
    size = x.shape[dim]
    if not isinstance(size, int):
        raise Error(f"list index into dynamic dim {size}: use an index tensor")
    flat = [int(v) for v in array.reshape(-1)]
    for v in flat:
        if not -size <= v < size:
            raise IndexError(f"index {v} is out of range for dim {dim} of size {size}")
    flat = [v + size if v < 0 else v for v in flat]
    if len(flat) > _MAX_LIST_INDEX:
        raise Error(f"a list index of {len(flat)} entries is too long to build as constants "
                    f"(at most {_MAX_LIST_INDEX}); pass an index tensor as an input")
    g = x.graph
    if len(flat) == 1:
        t = g.constant(flat[0], _convert.int32).reshape_((1,))
    elif len(flat) > 1 and builtins.all(b - a == flat[1] - flat[0] for a, b in zip(flat, flat[1:])) and flat[1] > flat[0]:
        t = _ops.arange(g, float(flat[0]), float(flat[-1] + (flat[1] - flat[0])), float(flat[1] - flat[0]), _convert.int32)
    else:
        t = _ops.stack([g.constant(v, _convert.int32) for v in flat], 0) if flat else \
            _ops.full(g, (0,), 0.0, _convert.int32)
    return t.reshape_(tuple(int(d) for d in array.shape))


_MAX_LIST_INDEX = 4096


def _getitem(x: Tensor, key):
    if isinstance(key, list) and builtins.any(isinstance(k, (list, tuple, Tensor)) for k in key):
        raise Error("a nested list as the whole index is read by PyTorch as one index per axis (paired "
                    "elementwise), which lumen does not do; pass an index tensor, or wrap it: x[(nested,)]")
    if not isinstance(key, tuple):
        key = (key,)
    advanced = builtins.sum(1 for k in key if isinstance(k, (Tensor, list)))
    if advanced > 1:
        raise Error("indexing with more than one index tensor or list: PyTorch pairs them elementwise, which lumen "
                    "does not do; index one axis at a time, or use gather / take_along_dim")
    specified = builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
    if specified > x.ndim:
        raise IndexError(f"too many indices for a tensor of shape {x.shape}")
    out, dim = x, 0
    for k in key:
        if k is Ellipsis:
            dim += x.ndim - specified
        elif k is None:
            out = out.unsqueeze(dim)
            dim += 1
        elif isinstance(k, bool):
            raise Error("indexing with a Python bool is not supported")
        elif isinstance(k, numbers.Integral):
            size = out.shape[dim]
            k = int(k)
            if isinstance(size, int):
                if not -size <= k < size:
                    raise IndexError(f"index {k} is out of range for dim {dim} of size {size}")
                k = k + size if k < 0 else k
            elif k < 0:
                raise Error(f"negative index {k} into dynamic dim {size}")
            out = _ops.narrow(out, dim, k, 1).reshape_(out.shape[:dim] + out.shape[dim + 1:])
        elif isinstance(k, slice):
            step = 1 if k.step is None else int(k.step)
            if step <= 0:
                raise Error("slice step must be positive (use flip to reverse)")
            if isinstance(k.start, Dim) or isinstance(k.stop, Dim):  # symbolic bounds: a plain view
                start = 0 if k.start is None else k.start
                stop = out.shape[dim] if k.stop is None else k.stop
                out = out.slice_(dim, start, stop, step)
            else:
                out = _ops.slice(out, dim, k.start, k.stop, step)
            dim += 1
        elif isinstance(k, list):
            out = out.gather_axis(_list_index(out, k, dim), dim)
            dim += np.asarray(k).ndim
        elif isinstance(k, Tensor):
            if k.dtype == _convert.bool_:
                raise Error("boolean mask indexing gives a data-dependent shape; use where() instead")
            out = out.gather_axis(k.cast(_convert.int32) if k.dtype != _convert.int32 else k, dim)
            dim += k.ndim
        else:
            raise TypeError(f"unsupported index {k!r}")
    return out


def _method(fn):
    return lambda self, *args, **kwargs: fn(self, *args, **kwargs)


def _shape(args):
    return F._shape_args(args)


def _install():
    T = Tensor
    T.__add__ = F.add
    T.__radd__ = _reflected(F.add)
    T.__sub__ = F.sub
    T.__rsub__ = _reflected(F.sub)
    T.__mul__ = F.mul
    T.__rmul__ = _reflected(F.mul)
    T.__truediv__ = F.div
    T.__rtruediv__ = _reflected(F.div)
    T.__floordiv__ = F.floor_divide
    T.__rfloordiv__ = _reflected(F.floor_divide)
    T.__mod__ = F.remainder
    T.__rmod__ = _reflected(F.remainder)
    T.__pow__ = F.pow
    T.__rpow__ = _reflected(F.pow)
    T.__matmul__ = F.matmul
    T.__rmatmul__ = _reflected(F.matmul)
    T.__neg__ = _method(F.neg)  # nanobind functions are not descriptors: wrap them
    T.__abs__ = _method(F.abs)
    T.__invert__ = _method(F.logical_not)
    T.__and__ = F.logical_and
    T.__or__ = F.logical_or
    T.__xor__ = F.logical_xor
    T.__eq__ = F.eq
    T.__ne__ = F.ne
    T.__lt__ = F.lt
    T.__le__ = F.le
    T.__gt__ = F.gt
    T.__ge__ = F.ge
    T.__hash__ = object.__hash__
    T.__getitem__ = _getitem

    def _no_bool(self):
        raise Error("a lumen.Tensor has no value until the graph is compiled and run; it cannot be used as a bool")

    T.__bool__ = _no_bool

    def _len(self):
        size = self.shape[0] if self.ndim else None
        if not isinstance(size, int):
            raise TypeError("len() of a 0-d or dynamic-length tensor")
        return size

    T.__len__ = _len

    for name in ["add", "sub", "mul", "div", "pow", "remainder", "fmod", "floor_divide", "maximum", "minimum",
                 "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
                 "neg", "abs", "sign", "exp", "log", "log2", "log10", "rsqrt", "cos", "tan", "tanh", "erf",
                 "sigmoid", "relu", "floor", "ceil", "round", "trunc", "reciprocal", "isnan", "isinf",
                 "isfinite", "sum", "mean", "amax", "amin", "max", "min", "prod", "var", "std", "logsumexp",
                 "all", "any", "argmax", "argmin", "cumsum", "cumprod", "softmax", "log_softmax", "squeeze", "transpose",
                 "flatten", "narrow", "matmul", "gather", "index_select", "clamp", "clip", "split", "chunk",
                 "tile", "roll", "tril", "triu"]:
        setattr(T, name, _method(getattr(F, name)))
    T.exp2 = lambda self: _ops.exp2(self)
    T.sqrt = lambda self: _ops.sqrt(self)
    T.sin = lambda self: _ops.sin(self)
    T.reshape = lambda self, *shape: self.reshape_(_shape(shape))
    T.view = T.reshape
    T.permute = lambda self, *dims: self.permute_(_shape(dims))
    T.expand = lambda self, *sizes: _expand(self, _shape(sizes))
    T.expand_as = lambda self, other: self.expand_(other.shape)
    T.broadcast_to = lambda self, shape: self.expand_(tuple(shape))
    T.repeat = lambda self, *sizes: _ops.repeat(self, [int(s) for s in _shape(sizes)])
    T.flip = lambda self, *dims: F.flip(self, _shape(dims))
    T.t = lambda self: self.transpose(0, 1) if self.ndim == 2 else self
    T.T = property(lambda self: self.permute_(list(range(self.ndim))[::-1]))
    T.mT = property(lambda self: self.transpose(-2, -1))
    T.size = lambda self, dim=None: self.shape if dim is None else self.shape[dim]
    T.dim = lambda self: self.ndim
    T.float = lambda self: self.cast(_convert.float32)
    T.half = lambda self: self.cast(_convert.float16)
    T.bfloat16 = lambda self: self.cast(_convert.bfloat16)
    T.int = lambda self: self.cast(_convert.int32)
    T.long = lambda self: self.cast(_convert.int64)
    T.double = lambda self: self.cast(_convert.float64)
    T.bool = lambda self: self.cast(_convert.bool_)
    T.to = lambda self, dtype: self.cast(_convert.dtype(dtype))
    T.type = T.to
    T.masked_fill = lambda self, mask, value: F.where(mask, value, self)

    Graph.zeros = lambda self, *shape, dtype=_convert.float32: _ops.full(self, _shape(shape), 0.0, _convert.dtype(dtype))
    Graph.ones = lambda self, *shape, dtype=_convert.float32: _ops.full(self, _shape(shape), 1.0, _convert.dtype(dtype))
    Graph.full = lambda self, shape, value, dtype=_convert.float32: _ops.full(self, tuple(shape), value, _convert.dtype(dtype))
    Graph.arange = _arange
    Graph.linspace = lambda self, start, end, steps, dtype=_convert.float32: _ops.linspace(self, float(start), float(end), int(steps), _convert.dtype(dtype))
    Graph.eye = lambda self, n, m=None, dtype=_convert.float32: _ops.eye(self, int(n), -1 if m is None else int(m), _convert.dtype(dtype))
    Graph.rand = lambda self, *shape, seed=0, dtype=_convert.float32: _ops.rand(self, _shape(shape), int(seed), _convert.dtype(dtype))
    Graph.randn = lambda self, *shape, seed=0, dtype=_convert.float32: _ops.randn(self, _shape(shape), int(seed), _convert.dtype(dtype))
    Graph.compile = lambda self, outputs=None, backend="cpu", **options: _compile(self, outputs, backend, **options)



def _expand(x, sizes):
    lead = len(sizes) - x.ndim
    target = [x.shape[i - lead] if (i >= lead and isinstance(s, int) and s == -1) else s for i, s in enumerate(sizes)]
    return x.expand_(tuple(target))


def _arange(self, start, end=None, step=1, dtype=None):
    if end is None:
        start, end = 0, start
    if dtype is None:
        integral = builtins.all(isinstance(v, numbers.Integral) for v in (start, end, step))
        # int32 (lumen's default integer) unless a value needs int64: never narrowed silently
        wide = integral and not builtins.all(-2**31 <= int(v) < 2**31 for v in (start, end, step))
        dtype = (_convert.int64 if wide else _convert.int32) if integral else _convert.float32
    dtype = _convert.dtype(dtype)
    if dtype == _convert.int64 and builtins.all(isinstance(v, numbers.Integral) for v in (start, end, step)) and step:
        # exact past 2^53 (a double would round the ends): count in Python ints, offset in i64
        n = max(0, -((int(start) - int(end)) // int(step)))
        return _ops.arange(self, 0.0, float(n), 1.0, dtype) * int(step) + int(start)
    return _ops.arange(self, float(start), float(end), float(step), dtype)


def _compile(graph, outputs, backend, **options):
    from ._lumen import compile as _c
    return _c(graph, outputs, backend, **options)
