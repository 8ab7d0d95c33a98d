"""Module-level functions with PyTorch-style signatures, over lumen.ops."""
from __future__ import annotations

import builtins
import collections
import numbers

from ._lumen import Error, Tensor
from ._lumen import ops as _ops
from . import _convert

_MaxResult = collections.namedtuple("max", ["values", "indices"])
_cxx_transpose = Tensor.transpose  # before _tensor installs the Python one


def _axes(dim):
    if dim is None:
        return []
    if isinstance(dim, numbers.Integral):
        return [int(dim)]
    return [int(d) for d in dim]


def _scalar_axes_ok(x, dims):
    """PyTorch treats a 0-d tensor as having one axis that dim 0 and -1 name."""
    return x.ndim == 0 and builtins.all(int(d) in (0, -1) for d in dims)


def _on_scalar(x, dims, fn):
    """fn applied to a 0-d `x` seen as shape (1,) with `dims` naming axis 0, and the result back to 0-d."""
    out = fn(x.reshape_((1,)), [0 for _ in dims])
    if isinstance(out, tuple):
        return type(out)(*(o.reshape_(()) for o in out))
    return out.reshape_(())


def _pair(a, b):
    """Both operands as tensors, scalars adopting the tensor's dtype."""
    if isinstance(a, Tensor):
        return a, _convert.as_tensor(b, a)
    if isinstance(b, Tensor):
        return _convert.as_tensor(a, b), b
    raise TypeError("at least one operand must be a lumen.Tensor")


def _binary(op):
    def f(a, b):
        x, y = _pair(a, b)
        return op(x, y)
    f.__name__ = op.__name__
    return f


add = _binary(_ops.add)
sub = subtract = _binary(_ops.sub)
mul = multiply = _binary(_ops.mul)
floor_divide = _binary(_ops.floor_divide)
remainder = _binary(_ops.remainder)
fmod = _binary(_ops.fmod)
minimum = _binary(_ops.minimum)
maximum = _binary(_ops.maximum)
eq = _binary(_ops.eq)
ne = _binary(_ops.ne)
lt = less = _binary(_ops.lt)
le = less_equal = _binary(_ops.le)
gt = greater = _binary(_ops.gt)
ge = greater_equal = _binary(_ops.ge)
logical_and = _binary(_ops.logical_and)
logical_or = _binary(_ops.logical_or)
logical_xor = _binary(_ops.logical_xor)


def div(a, b, rounding_mode=None):
    x, y = _pair(a, b)
    if rounding_mode is None:
        return _ops.div(x, y)
    if rounding_mode == "floor":
        return _ops.floor_divide(x, y)
    if rounding_mode == "trunc":
        if _ops.promote_types(x.dtype, y.dtype) == _convert.int64:  # exact: x - fmod(x, y) is a multiple of y
            return _ops.floor_divide(x - _ops.fmod(x, y), y)
        q = _ops.div(x, y)
        t = _ops.trunc(q)
        return t if _convert.is_float(_ops.promote_types(x.dtype, y.dtype)) else t.cast(_ops.promote_types(x.dtype, y.dtype))
    raise Error(f"div: unknown rounding_mode {rounding_mode!r} (use None, 'floor' or 'trunc')")


divide = true_divide = div


def pow(a, b):
    if isinstance(a, Tensor) and isinstance(b, numbers.Real) and not isinstance(b, bool):
        return _ops.pow_scalar(a, float(b))
    x, y = _pair(a, b)
    return _ops.pow(x, y)


def where(condition, a, b):
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError("where: at least one of the values must be a lumen.Tensor")
    x, y = _pair(a, b)
    return _ops.where(condition, x, y)


def clamp(x, min=None, max=None):
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        r = x
        if min is not None:
            r = maximum(r, min)
        if max is not None:
            r = minimum(r, max)
        return r
    return _ops.clamp(x, None if min is None else float(min), None if max is None else float(max))


clip = clamp

# unary math
neg = negative = _ops.neg
abs = _ops.abs
sign = _ops.sign
exp = _ops.exp
exp2 = _ops.exp2
log = _ops.log
log2 = _ops.log2
log10 = _ops.log10
sqrt = _ops.sqrt
rsqrt = _ops.rsqrt
reciprocal = _ops.reciprocal
sin = _ops.sin
cos = _ops.cos
tan = _ops.tan
tanh = _ops.tanh
erf = _ops.erf
sigmoid = _ops.sigmoid
relu = _ops.relu
floor = _ops.floor
ceil = _ops.ceil
round = _ops.round
trunc = _ops.trunc
logical_not = _ops.logical_not
isnan = _ops.isnan
isinf = _ops.isinf
isfinite = _ops.isfinite


# reductions
def _reduce(op, x, dim, keepdim):
    """op(x, axes, keepdim); a 0-d x accepts dim 0 / -1 (its one wrappable axis)."""
    axes = _axes(dim)
    if axes and _scalar_axes_ok(x, axes):
        return _on_scalar(x, axes, lambda v, a: op(v, a, False))
    return op(x, axes, keepdim)


def _nonempty(x, dim, name):
    """PyTorch refuses max/min-style reductions over an empty axis (they have no identity)."""
    dims = range(x.ndim) if dim is None else [d % x.ndim for d in _axes(dim) if -x.ndim <= d < x.ndim]
    for d in dims:
        if isinstance(x.shape[d], int) and x.shape[d] == 0:
            raise Error(f"{name}: cannot reduce over dim {d} of size 0 (shape {tuple(x.shape)}); "
                        "the reduction has no identity (PyTorch refuses it too)")


def sum(x, dim=None, keepdim=False, dtype=None):
    r = _reduce(_ops.sum, x, dim, keepdim)
    return r if dtype is None else r.cast(_convert.dtype(dtype))


def mean(x, dim=None, keepdim=False):
    return _reduce(_ops.mean, x, dim, keepdim)


def amax(x, dim=None, keepdim=False):
    _nonempty(x, dim, "amax")
    return _reduce(_ops.amax, x, dim, keepdim)


def amin(x, dim=None, keepdim=False):
    _nonempty(x, dim, "amin")
    return _reduce(_ops.amin, x, dim, keepdim)


def max(x, dim=None, keepdim=False):
    """torch.max: the maximum over everything, over `dim` as (values, indices), or elementwise with a tensor."""
    if isinstance(dim, Tensor):
        return maximum(x, dim)
    _nonempty(x, dim, "max")
    if dim is None:
        return _ops.amax(x, [], False)
    return _MaxResult(amax(x, dim, keepdim), argmax(x, dim, keepdim))


def min(x, dim=None, keepdim=False):
    if isinstance(dim, Tensor):
        return minimum(x, dim)
    _nonempty(x, dim, "min")
    if dim is None:
        return _ops.amin(x, [], False)
    return _MaxResult(amin(x, dim, keepdim), argmin(x, dim, keepdim))


def prod(x, dim=None, keepdim=False):
    return _reduce(_ops.prod, x, dim, keepdim)


def _correction(correction, unbiased):
    if correction is not None:
        if unbiased is not None:
            raise Error("var/std: give either unbiased or correction, not both")
        return float(correction)
    return 1.0 if unbiased is None or unbiased else 0.0


def _moment(op, x, dim, unbiased, keepdim, correction):
    if isinstance(dim, bool):  # torch.var(input, unbiased) overload: a positional bool is `unbiased`, not a dim
        if unbiased is not None:
            raise Error("var/std: the second argument is a bool (unbiased); give dim before it")
        dim, unbiased = None, dim
    c = _correction(correction, unbiased)
    return _reduce(lambda v, a, k: op(v, a, c, k), x, dim, keepdim)


def var(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _moment(_ops.var, x, dim, unbiased, keepdim, correction)


def std(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _moment(_ops.std, x, dim, unbiased, keepdim, correction)


def logsumexp(x, dim, keepdim=False):
    return _reduce(_ops.logsumexp, x, dim, keepdim)


def all(x, dim=None, keepdim=False):
    return _reduce(_ops.all, x, dim, keepdim)


def any(x, dim=None, keepdim=False):
    return _reduce(_ops.any, x, dim, keepdim)


def _arg(op, name, x, dim, keepdim):
    _nonempty(x, dim, name)
    if dim is not None and _scalar_axes_ok(x, [dim]):
        return _on_scalar(x, [dim], lambda v, a: op(v, 0, False))
    return op(x, dim, keepdim)


def argmax(x, dim=None, keepdim=False):
    return _arg(_ops.argmax, "argmax", x, dim, keepdim)


def argmin(x, dim=None, keepdim=False):
    return _arg(_ops.argmin, "argmin", x, dim, keepdim)


def _along(op, x, dim):
    """op(x, dim) for ops that keep the shape (cumsum, softmax); a 0-d x accepts dim 0 / -1."""
    if _scalar_axes_ok(x, [dim]):
        return _on_scalar(x, [dim], lambda v, a: op(v, 0))
    return op(x, dim)


def cumsum(x, dim):
    return _along(_ops.cumsum, x, dim)


def cumprod(x, dim):
    return _along(_ops.cumprod, x, dim)


def softmax(x, dim=-1):
    return _along(_ops.softmax, x, dim)


def log_softmax(x, dim=-1):
    return _along(_ops.log_softmax, x, dim)


# movement
def _shape_args(shape):
    if len(shape) == 1 and not isinstance(shape[0], (numbers.Integral, str)) and not hasattr(shape[0], "__add__"):
        return tuple(shape[0])
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def reshape(x, *shape):
    return x.reshape_(_shape_args(shape))


def permute(x, *dims):
    return x.permute_(_shape_args(dims))


def transpose(x, dim0, dim1):
    if _scalar_axes_ok(x, [dim0, dim1]):  # a 0-d tensor transposed with its one axis is itself
        return x
    return _cxx_transpose(x, dim0, dim1)


swapaxes = transpose


def squeeze(x, dim=None):
    """torch.squeeze: every size-1 axis (dim=None), or those of `dim` that have size 1; dim=() squeezes none."""
    if dim is None:
        return _ops.squeeze(x, [])
    axes = _axes(dim)
    if not axes or _scalar_axes_ok(x, axes):
        return x
    return _ops.squeeze(x, axes)


def unsqueeze(x, dim):
    return x.unsqueeze(dim)


def flatten(x, start_dim=0, end_dim=-1):
    return _ops.flatten(x, start_dim, end_dim)


def narrow(x, dim, start, length):
    return _ops.narrow(x, dim, start, length)


def flip(x, dims):
    return _ops.flip(x, _axes(dims))


def broadcast_to(x, shape):
    return x.expand_(tuple(shape))


def cat(tensors, dim=0):
    return _ops.concat(list(tensors), dim)


concat = concatenate = cat


def stack(tensors, dim=0):
    return _ops.stack(list(tensors), dim)


def split(x, split_size_or_sections, dim=0):
    if isinstance(split_size_or_sections, numbers.Integral):
        return tuple(_ops.split(x, int(split_size_or_sections), dim))
    return tuple(_ops.split_sizes(x, [int(s) for s in split_size_or_sections], dim))


def chunk(x, chunks, dim=0):
    return tuple(_ops.chunk(x, chunks, dim))


def tile(x, dims):
    return _ops.tile(x, [int(d) for d in dims])


def roll(x, shifts, dims=None):
    shifts = [int(shifts)] if isinstance(shifts, numbers.Integral) else [int(s) for s in shifts]
    return _ops.roll(x, shifts, _axes(dims))


# indexing
def gather(x, dim, index):
    return _ops.gather(x, dim, index)


def index_select(x, dim, index):
    return _ops.index_select(x, dim, index)


def take_along_dim(x, indices, dim):
    return _ops.take_along_dim(x, indices, dim)


# linear algebra
def matmul(a, b):
    return _ops.matmul(a, b)


def bmm(a, b):
    return _ops.bmm(a, b)


def outer(a, b):
    return _ops.outer(a, b)


def einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return _ops.einsum(equation, list(operands))


# creation relative to an existing tensor
def zeros_like(x, dtype=None):
    return _ops.full(x.graph, x.shape, 0.0, x.dtype if dtype is None else _convert.dtype(dtype))


def ones_like(x, dtype=None):
    return _ops.full(x.graph, x.shape, 1.0, x.dtype if dtype is None else _convert.dtype(dtype))


def full_like(x, fill_value, dtype=None):
    return _ops.full(x.graph, x.shape, fill_value, x.dtype if dtype is None else _convert.dtype(dtype))


def tril(x, diagonal=0):
    return _ops.tril(x, diagonal)


def triu(x, diagonal=0):
    return _ops.triu(x, diagonal)
