"""torch.nn.functional-style layers over lumen.ops."""
from __future__ import annotations

import numbers

from .._lumen import Error, Tensor
from .._lumen import ops as _ops
from .. import _functions as _f

relu = _ops.relu
sigmoid = _ops.sigmoid
tanh = _ops.tanh
silu = _ops.silu
mish = _ops.mish
softmax = _f.softmax
log_softmax = _f.log_softmax


def _pair(v):
    if isinstance(v, numbers.Integral):
        return (int(v), int(v))
    a, b = v
    return (int(a), int(b))


def gelu(x, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise Error(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _ops.gelu(x, approximate == "tanh")


def leaky_relu(x, negative_slope=0.01):
    return _ops.leaky_relu(x, float(negative_slope))


def softplus(x, beta=1.0, threshold=20.0):
    return _ops.softplus(x, float(beta), float(threshold))


def linear(x, weight, bias=None):
    return _ops.linear(x, weight, bias)


def embedding(indices, weight):
    return _ops.embedding(indices, weight)


def one_hot(indices, num_classes=-1):
    if num_classes < 0:
        raise Error("one_hot: num_classes must be given (the output shape cannot depend on the data)")
    return _ops.one_hot(indices, int(num_classes))


def pad(x, pad, mode="constant", value=None):
    return _ops.pad(x, [int(p) for p in pad], mode, 0.0 if value is None else float(value))


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    n = 1 if isinstance(normalized_shape, numbers.Integral) else len(normalized_shape)
    return _ops.layer_norm(x, n, weight, bias, float(eps))


def rms_norm(x, normalized_shape, weight=None, eps=None):
    n = 1 if isinstance(normalized_shape, numbers.Integral) else len(normalized_shape)
    return _ops.rms_norm(x, n, weight, None if eps is None else float(eps))


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    return _ops.group_norm(x, int(num_groups), weight, bias, float(eps))


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    if training:
        raise Error("batch_norm: only inference mode (training=False) is supported")
    return _ops.batch_norm(x, running_mean, running_var, weight, bias, float(eps))


def dropout(x, p=0.5, training=True, inplace=False, seed=0):
    return _ops.dropout(x, float(p), bool(training), int(seed))


def _conv_padding(padding, kernel, dilation, stride, op):
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0)
        if padding == "same":
            if stride != (1, 1):
                raise Error(f"{op}: padding='same' needs stride 1")
            total = tuple(d * (k - 1) for d, k in zip(dilation, kernel))
            if any(t % 2 for t in total):
                raise Error(f"{op}: padding='same' with an even kernel span is asymmetric and not supported")
            return tuple(t // 2 for t in total)
        raise Error(f"{op}: unknown padding {padding!r}")
    return _pair(padding)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    kernel = tuple(weight.shape[2:4])
    s, d = _pair(stride), _pair(dilation)
    return _ops.conv2d(x, weight, bias, s, _conv_padding(padding, kernel, d, s, "conv2d"), d, int(groups))


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if isinstance(padding, str):
        padding = _conv_padding(padding, (1, weight.shape[2]), (1, int(dilation)), (1, int(stride)), "conv1d")[1]
    return _ops.conv1d(x, weight, bias, int(stride), int(padding), int(dilation), int(groups))


def conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _ops.conv_transpose2d(x, weight, bias, _pair(stride), _pair(padding), _pair(output_padding), int(groups),
                                 _pair(dilation))


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if return_indices:
        raise Error("max_pool2d: return_indices is not supported")
    k = _pair(kernel_size)
    return _ops.max_pool2d(x, k, k if stride is None else _pair(stride), _pair(padding), _pair(dilation), ceil_mode)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    if divisor_override is not None:
        raise Error("avg_pool2d: divisor_override is not supported")
    k = _pair(kernel_size)
    return _ops.avg_pool2d(x, k, k if stride is None else _pair(stride), _pair(padding), ceil_mode, count_include_pad)


def adaptive_avg_pool2d(x, output_size):
    return _ops.adaptive_avg_pool2d(x, _pair(output_size))


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    sz = None if size is None else _pair(size)
    sf = None
    if scale_factor is not None:
        sf = (float(scale_factor), float(scale_factor)) if isinstance(scale_factor, numbers.Real) else tuple(float(v) for v in scale_factor)
    return _ops.interpolate(x, sz, sf, mode, bool(align_corners))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    if dropout_p != 0.0:
        raise Error("scaled_dot_product_attention: dropout_p must be 0 (inference)")
    return _ops.scaled_dot_product_attention(query, key, value, attn_mask, is_causal, scale, enable_gqa)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    if weight is not None:
        raise Error("cross_entropy: class weights are not supported")
    return _ops.cross_entropy(input, target, reduction, float(label_smoothing))


def mse_loss(input, target, reduction="mean"):
    return _ops.mse_loss(input, target, reduction)
