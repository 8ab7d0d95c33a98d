"""Lowerings of linear algebra, convolution, normalisation, pooling and
attention ATen ops (see lowering.py)."""
from __future__ import annotations

import torch

from .. import _lumen
from .lowering import _as, _scalar, lowers
from .values import Unsupported

aten = torch.ops.aten
_ops = _lumen.ops


@lowers(aten.mm.default, aten.bmm.default, aten.matmul.default)
def _mm(ctx, a, b):
    return _ops.matmul(a, b)


@lowers(aten.addmm.default)
def _addmm(ctx, bias, a, b, beta=1, alpha=1):
    d = ctx.out_dtype
    prod = _ops.matmul(a, b)
    if alpha != 1:
        prod = _ops.mul(prod, _scalar(ctx, alpha, d))
    if beta == 0:
        return prod
    if beta != 1:
        bias = _ops.mul(_as(ctx, bias, d), _scalar(ctx, beta, d))
    return _ops.add(prod, _as(ctx, bias, d))


@lowers(aten.baddbmm.default)
def _baddbmm(ctx, bias, a, b, beta=1, alpha=1):
    return _addmm(ctx, bias, a, b, beta, alpha)


@lowers(aten.linear.default)
def _linear(ctx, x, weight, bias=None):
    return _ops.linear(x, weight, bias)


def _pair(v):
    v = list(v)
    return (int(v[0]), int(v[-1])) if v else (0, 0)


@lowers(aten.convolution.default)
def _convolution(ctx, x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    if x.ndim == 4:
        if transposed:
            return _ops.conv_transpose2d(x, weight, bias, _pair(stride), _pair(padding), _pair(output_padding),
                                         int(groups), _pair(dilation))
        return _ops.conv2d(x, weight, bias, _pair(stride), _pair(padding), _pair(dilation), int(groups))
    if x.ndim == 3 and not transposed:
        return _ops.conv1d(x, weight, bias, int(stride[0]), int(padding[0]), int(dilation[0]), int(groups))
    raise Unsupported(f"convolution over {x.ndim - 2} spatial dims{' (transposed)' if transposed else ''}")


def _stats(ctx, x, axes, eps):
    """mean and 1/sqrt(var + eps) over `axes`, kept (native_*_norm's second and third outputs)."""
    mean = _ops.mean(x, axes, True)
    var = _ops.var(x, axes, 0.0, True)
    return mean, _ops.rsqrt(_ops.add(var, ctx.graph.constant(float(eps), var.dtype)))


@lowers(aten.native_layer_norm.default)
def _layer_norm(ctx, x, normalized_shape, weight, bias, eps):
    n = len(normalized_shape)
    out = _ops.layer_norm(x, n, weight, bias, float(eps))
    mean, rstd = _stats(ctx, x, list(range(x.ndim - n, x.ndim)), eps)
    return out, mean, rstd


@lowers(aten.native_group_norm.default)
def _group_norm(ctx, x, weight, bias, n, c, hw, groups, eps):
    # mean and rstd (the second and third outputs) only matter for training: not given
    return _ops.group_norm(x, int(groups), weight, bias, float(eps)), None, None


@lowers(aten._native_batch_norm_legit_no_training.default)
def _batch_norm(ctx, x, weight, bias, running_mean, running_var, momentum, eps):
    return _ops.batch_norm(x, running_mean, running_var, weight, bias, float(eps)), None, None


@lowers(aten.max_pool2d_with_indices.default)
def _max_pool2d(ctx, x, kernel, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    k = _pair(kernel)
    s = _pair(stride) if stride else k
    return _ops.max_pool2d(x, k, s, _pair(padding), _pair(dilation), bool(ceil_mode)), None


@lowers(aten.avg_pool2d.default)
def _avg_pool2d(ctx, x, kernel, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True,
                divisor_override=None):
    if divisor_override is not None:
        raise Unsupported("avg_pool2d with divisor_override")
    k = _pair(kernel)
    return _ops.avg_pool2d(x, k, _pair(stride) if stride else k, _pair(padding), bool(ceil_mode),
                           bool(count_include_pad))


@lowers(aten._adaptive_avg_pool2d.default, aten.adaptive_avg_pool2d.default)
def _adaptive_avg_pool2d(ctx, x, output_size):
    return _ops.adaptive_avg_pool2d(x, _pair(output_size))


@lowers(aten.upsample_nearest2d.vec, aten.upsample_bilinear2d.vec, aten.upsample_nearest2d.default,
        aten.upsample_bilinear2d.default)
def _upsample(ctx, x, output_size, *rest):
    if ctx.node.target in (aten.upsample_nearest2d.vec, aten.upsample_nearest2d.default):
        mode, align = "nearest", False
    else:
        mode, align = "bilinear", bool(rest[0])
    shape = ctx.out_shape()
    if not all(isinstance(s, int) for s in shape[2:]):
        raise Unsupported("upsampling to a symbolic size")
    return _ops.interpolate(x, (shape[2], shape[3]), None, mode, align)


@lowers(aten.scaled_dot_product_attention.default)
def _sdpa(ctx, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    if dropout_p:
        raise Unsupported("attention dropout")
    return _ops.scaled_dot_product_attention(q, k, v, attn_mask, bool(is_causal), scale, bool(enable_gqa))
