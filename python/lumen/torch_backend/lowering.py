"""The lowering table: one function per ATen overload, building lumen ops
through lumen's PyTorch-style Python API. A lowering gets a LoweringContext
(the lumen graph, the node's example value) and the node's arguments with FX
nodes replaced by lumen tensors and SymInts by lumen Dims. It raises
Unsupported for argument combinations lumen does not take; the caller then
leaves the node to PyTorch."""
from __future__ import annotations

import numbers

import torch

from .. import _functions as F
from .. import _lumen
from .values import Unsupported, lumen_dtype

aten = torch.ops.aten
Tensor = _lumen.Tensor
_ops = _lumen.ops

LOWERINGS = {}


def lowers(*overloads):
    def register(fn):
        for op in overloads:
            LOWERINGS[op] = fn
        return fn
    return register


class LoweringContext:
    """What a lowering may look at besides its arguments."""

    def __init__(self, graph, node, dims, arg_values):
        self.graph = graph
        self.node = node
        self.dims = dims
        self.out = node.meta.get("val")
        self.arg_values = arg_values  # the node's args as example values (FakeTensors, scalars)

    @property
    def out_dtype(self):
        out = self.out[0] if isinstance(self.out, (tuple, list)) else self.out
        return lumen_dtype(out.dtype)

    def out_shape(self, index=None):
        out = self.out if index is None else self.out[index]
        return self.dims.shape(out.shape)

    def result_type(self):
        """torch's promoted dtype of the first two arguments (for comparisons, whose output is bool)."""
        a, b = self.arg_values[0], self.arg_values[1]
        return lumen_dtype(torch.result_type(a, b) if isinstance(a, torch.Tensor) else torch.result_type(b, a))


def _scalar(ctx, value, dtype):
    if isinstance(value, bool) or isinstance(value, numbers.Real):
        return ctx.graph.constant(float(value), dtype)
    raise Unsupported(f"scalar operand {value!r} ({type(value).__name__}) is not a number lumen can hold")


def _as(ctx, value, dtype):
    """`value` (tensor or Python scalar) as a tensor of lumen dtype `dtype`."""
    if isinstance(value, Tensor):
        return value if value.dtype == dtype else value.cast(dtype)
    return _scalar(ctx, value, dtype)


# ---- elementwise arithmetic: computed in the node's output dtype (torch already promoted)

def _arith(op):
    def lower(ctx, a, b, alpha=1):
        d = ctx.out_dtype
        x, y = _as(ctx, a, d), _as(ctx, b, d)
        if alpha != 1:
            y = op_mul(y, _scalar(ctx, alpha, d))
        return op(x, y)
    return lower


op_mul = _ops.mul
lowers(aten.add.Tensor, aten.add.Scalar)(_arith(_ops.add))
lowers(aten.sub.Tensor, aten.sub.Scalar)(_arith(_ops.sub))
lowers(aten.mul.Tensor, aten.mul.Scalar)(_arith(_ops.mul))
lowers(aten.maximum.default)(_arith(_ops.maximum))
lowers(aten.minimum.default)(_arith(_ops.minimum))
lowers(aten.remainder.Tensor, aten.remainder.Scalar)(_arith(_ops.remainder))
lowers(aten.fmod.Tensor, aten.fmod.Scalar)(_arith(_ops.fmod))
lowers(aten.floor_divide.default)(_arith(_ops.floor_divide))


@lowers(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(ctx, a, b, alpha=1):
    d = ctx.out_dtype
    x = _as(ctx, a, d)
    if alpha != 1:
        x = _ops.mul(x, _scalar(ctx, alpha, d))
    return _ops.sub(_as(ctx, b, d), x)


@lowers(aten.div.Tensor, aten.div.Scalar, aten.true_divide.Tensor, aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div(ctx, a, b, rounding_mode=None):
    d = ctx.out_dtype
    if rounding_mode is None:
        return _ops.div(_as(ctx, a, d), _as(ctx, b, d))
    return F.div(_as(ctx, a, d), _as(ctx, b, d), rounding_mode=rounding_mode)


@lowers(aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.pow.Scalar)
def _pow(ctx, a, b):
    d = ctx.out_dtype
    if isinstance(b, numbers.Real) and not isinstance(b, bool):
        return _ops.pow_scalar(_as(ctx, a, d), float(b))
    return _ops.pow(_as(ctx, a, d), _as(ctx, b, d))


@lowers(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def _where(ctx, cond, a, b):
    d = ctx.out_dtype
    return _ops.where(_as(ctx, cond, _lumen.DType.bool), _as(ctx, a, d), _as(ctx, b, d))


@lowers(aten.clamp.default, aten.clamp.Tensor, aten.clamp_min.default, aten.clamp_max.default,
        aten.clamp_min.Tensor, aten.clamp_max.Tensor, aten.hardtanh.default)
def _clamp(ctx, x, lo=None, hi=None):
    op = ctx.node.target
    if op in (aten.clamp_max.default, aten.clamp_max.Tensor):
        lo, hi = None, lo
    if op is aten.hardtanh.default:
        lo = -1.0 if lo is None else lo
        hi = 1.0 if hi is None else hi
    d = ctx.out_dtype
    r = _as(ctx, x, d)
    if isinstance(lo, Tensor) or isinstance(hi, Tensor):
        if lo is not None:
            r = _ops.maximum(r, _as(ctx, lo, d))
        if hi is not None:
            r = _ops.minimum(r, _as(ctx, hi, d))
        return r
    return _ops.clamp(r, None if lo is None else float(lo), None if hi is None else float(hi))


# ---- comparisons and logic: operands promoted as torch does, output bool

def _compare(op):
    def lower(ctx, a, b):
        d = ctx.result_type()
        return op(_as(ctx, a, d), _as(ctx, b, d))
    return lower


for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    lowers(getattr(aten, _name).Tensor, getattr(aten, _name).Scalar)(_compare(getattr(_ops, _name)))


def _logic(op):
    def lower(ctx, a, b):
        B = _lumen.DType.bool
        return op(_as(ctx, a, B), _as(ctx, b, B))
    return lower


lowers(aten.logical_and.default)(_logic(_ops.logical_and))
lowers(aten.logical_or.default)(_logic(_ops.logical_or))
lowers(aten.logical_xor.default)(_logic(_ops.logical_xor))


def _bitwise(op):
    def lower(ctx, a, b):
        if ctx.out_dtype != _lumen.DType.bool:
            raise Unsupported("bitwise ops on integers (only on bool)")
        return op(_as(ctx, a, _lumen.DType.bool), _as(ctx, b, _lumen.DType.bool))
    return lower


lowers(aten.bitwise_and.Tensor, aten.bitwise_and.Scalar)(_bitwise(_ops.logical_and))
lowers(aten.bitwise_or.Tensor, aten.bitwise_or.Scalar)(_bitwise(_ops.logical_or))
lowers(aten.bitwise_xor.Tensor, aten.bitwise_xor.Scalar)(_bitwise(_ops.logical_xor))


@lowers(aten.logical_not.default, aten.bitwise_not.default)
def _not(ctx, x):
    if ctx.node.target is aten.bitwise_not.default and x.dtype != _lumen.DType.bool:
        raise Unsupported("bitwise_not on integers (only on bool)")
    return _ops.logical_not(_as(ctx, x, _lumen.DType.bool))


# ---- unary math: the input cast to the output dtype first (exp of an int tensor is float)

def _unary(op):
    def lower(ctx, x):
        return op(_as(ctx, x, ctx.out_dtype))
    return lower


_UNARY = {
    aten.neg.default: _ops.neg, aten.abs.default: _ops.abs, aten.sign.default: _ops.sign,
    aten.exp.default: _ops.exp, aten.exp2.default: _ops.exp2, aten.log.default: _ops.log,
    aten.log2.default: _ops.log2, aten.log10.default: _ops.log10, aten.sqrt.default: _ops.sqrt,
    aten.rsqrt.default: _ops.rsqrt, aten.reciprocal.default: _ops.reciprocal, aten.sin.default: _ops.sin,
    aten.cos.default: _ops.cos, aten.tan.default: _ops.tan, aten.tanh.default: _ops.tanh, aten.erf.default: _ops.erf,
    aten.sigmoid.default: _ops.sigmoid, aten.relu.default: _ops.relu, aten.floor.default: _ops.floor,
    aten.ceil.default: _ops.ceil, aten.round.default: _ops.round, aten.trunc.default: _ops.trunc,
    aten.silu.default: _ops.silu, aten.mish.default: _ops.mish,
}
for _op, _fn in _UNARY.items():
    lowers(_op)(_unary(_fn))


@lowers(aten.isnan.default, aten.isinf.default)
def _float_test(ctx, x):
    return (_ops.isnan if ctx.node.target is aten.isnan.default else _ops.isinf)(x)


@lowers(aten.expm1.default)
def _expm1(ctx, x):
    d = ctx.out_dtype
    return _ops.sub(_ops.exp(_as(ctx, x, d)), ctx.graph.constant(1.0, d))


@lowers(aten.log1p.default)
def _log1p(ctx, x):
    d = ctx.out_dtype
    return _ops.log(_ops.add(_as(ctx, x, d), ctx.graph.constant(1.0, d)))


@lowers(aten.gelu.default)
def _gelu(ctx, x, approximate="none"):
    return _ops.gelu(x, approximate == "tanh")


@lowers(aten.leaky_relu.default)
def _leaky_relu(ctx, x, negative_slope=0.01):
    return _ops.leaky_relu(x, float(negative_slope))


@lowers(aten.softplus.default)
def _softplus(ctx, x, beta=1.0, threshold=20.0):
    return _ops.softplus(x, float(beta), float(threshold))


@lowers(aten.hardsigmoid.default)
def _hardsigmoid(ctx, x):
    d = x.dtype
    return _ops.clamp(_ops.add(_ops.mul(x, ctx.graph.constant(1 / 6, d)), ctx.graph.constant(0.5, d)), 0.0, 1.0)


@lowers(aten.hardswish.default)
def _hardswish(ctx, x):
    return _ops.mul(x, _hardsigmoid(ctx, x))


# ---- casts and copies (the graph is functional: a copy is the value itself)

@lowers(aten._to_copy.default, torch.ops.prims.convert_element_type.default)
def _to_copy(ctx, x, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    if device is not None and torch.device(device).type != "cpu":
        raise Unsupported(f"a copy to device {device}")
    return _as(ctx, x, ctx.out_dtype)


@lowers(aten.clone.default, aten.lift_fresh_copy.default, aten.alias.default, aten.detach.default)
def _identity(ctx, x, memory_format=None):
    return x


# ---- creation

@lowers(aten.full.default)
def _full(ctx, size, value, dtype=None, layout=None, device=None, pin_memory=None):
    return _ops.full(ctx.graph, ctx.out_shape(), float(value), ctx.out_dtype)


@lowers(aten.full_like.default)
def _full_like(ctx, x, value, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _ops.full(ctx.graph, ctx.out_shape(), float(value), ctx.out_dtype)


@lowers(aten.scalar_tensor.default)
def _scalar_tensor(ctx, value, dtype=None, layout=None, device=None, pin_memory=None):
    return ctx.graph.constant(float(value), ctx.out_dtype)


@lowers(aten.arange.start_step, aten.arange.start, aten.arange.default)
def _arange(ctx, *args, dtype=None, layout=None, device=None, pin_memory=None):
    bounds = list(args) + [None] * (3 - len(args))
    if ctx.node.target is aten.arange.default:
        bounds = [0, args[0], 1]
    start, end, step = bounds[0], bounds[1], 1 if bounds[2] is None else bounds[2]
    if not all(isinstance(v, numbers.Real) for v in (start, end, step)):
        raise Unsupported("arange with symbolic bounds")
    return _ops.arange(ctx.graph, float(start), float(end), float(step), ctx.out_dtype)


@lowers(aten.elu.default)
def _elu(ctx, x, alpha=1.0, scale=1.0, input_scale=1.0):
    d, c = x.dtype, ctx.graph.constant
    negative = _ops.mul(_ops.sub(_ops.exp(_ops.mul(x, c(float(input_scale), d))), c(1.0, d)), c(float(alpha), d))
    out = _ops.where(_ops.gt(x, c(0.0, d)), x, negative)
    return out if scale == 1 else _ops.mul(out, c(float(scale), d))
