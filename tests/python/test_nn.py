"""nn functional ops against PyTorch."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import lumen
import lumen.nn.functional as F
from harness import FLOATS, Input, check, data, expect_error


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_layer_norm_rms_norm(backend, dtype):
    x = Input(data((3, 5, 33), dtype, 1), dtype)
    w, b = Input(data((33,), dtype, 2), dtype), Input(data((33,), dtype, 3), dtype)
    check("layer_norm", lambda t, p, q: F.layer_norm(t, (33,), p, q), lambda t, p, q: TF.layer_norm(t, (33,), p, q), [x, w, b], backend)
    check("layer_norm", lambda t: F.layer_norm(t, (5, 33)), lambda t: TF.layer_norm(t, (5, 33)), [x], backend)
    check("rms_norm", lambda t, p: F.rms_norm(t, (33,), p, 1e-6), lambda t, p: TF.rms_norm(t, (33,), p, 1e-6), [x, w], backend)
    check("rms_norm", lambda t: F.rms_norm(t, (33,)), lambda t: TF.rms_norm(t, (33,)), [x], backend)


def test_group_norm_batch_norm(backend):
    x = data((2, 6, 4, 5), seed=4)
    w, b = data((6,), seed=5), data((6,), seed=6)
    check("group_norm", lambda t, p, q: F.group_norm(t, 3, p, q), lambda t, p, q: TF.group_norm(t, 3, p, q), [x, w, b], backend)
    check("group_norm", lambda t: F.group_norm(t, 6), lambda t: TF.group_norm(t, 6), [x], backend)
    rm, rv = data((6,), seed=7), data((6,), seed=8, low=0.5, high=2)
    check("batch_norm", lambda t, m, v, p, q: F.batch_norm(t, m, v, p, q),
          lambda t, m, v, p, q: TF.batch_norm(t, m, v, p, q), [x, rm, rv, w, b], backend)


def test_dropout(backend):
    x = data((64, 64), seed=9)
    check("dropout", lambda t: F.dropout(t, 0.3, training=False), lambda t: TF.dropout(t, 0.3, training=False), [x], backend)
    from harness import run
    (y,), _ = run(lambda t: F.dropout(t, 0.25, training=True, seed=3), [x], backend)
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.03
    np.testing.assert_allclose(y[kept], x[kept] / 0.75, rtol=1e-6)


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), (2, 1, 1, 2), (1, 1, 1, 4)])
def test_conv2d(backend, stride, padding, dilation, groups):
    x = Input(data((2, 4, 9, 7), seed=10), layout="permuted")
    w, b = data((8, 4 // groups, 3, 3), seed=11), data((8,), seed=12)
    check("conv2d", lambda t, k, c: F.conv2d(t, k, c, stride, padding, dilation, groups),
          lambda t, k, c: TF.conv2d(t, k, c, stride, padding, dilation, groups), [x, w, b], backend, atol=1e-4)


# A strided 1 x 1 conv of NCHW values: every stride-th position (a strided view), then a pointwise
# matmul; 8 x 8 outputs (a row of 64 positions) and 3 x 4 (12: the channels form), stride 2 and (2, 3).
@pytest.mark.parametrize("shape,stride", [((2, 8, 16, 15), 2), ((1, 5, 6, 12), (2, 3))], ids=str)
def test_conv2d_strided_pointwise(backend, shape, stride):
    x, w, b = data(shape, seed=18), data((16, shape[1], 1, 1), seed=19), data((16,), seed=20)
    check("conv2d", lambda t, k, c: F.conv2d(t, k, c, stride), lambda t, k, c: TF.conv2d(t, k, c, stride),
          [x, w, b], backend, atol=1e-4)


# Output rows of 14 and 13 positions are computed padded to 16 (row-aligned
# panels) and sliced; 30 rows of 60 with stride 2 and a ReLU consumer too.
@pytest.mark.parametrize("shape,stride,padding", [((1, 8, 14, 14), 1, 1), ((2, 3, 6, 15), 1, 1), ((1, 4, 5, 60), 2, 1)])
def test_conv2d_rows_padded_to_lanes(backend, shape, stride, padding):
    x, w, b = data(shape, seed=15), data((6, shape[1], 3, 3), seed=16), data((6,), seed=17)
    check("conv2d", lambda t, k, c: F.relu(F.conv2d(t, k, c, stride, padding)),
          lambda t, k, c: torch.relu(TF.conv2d(t, k, c, stride, padding)), [x, w, b], backend, atol=1e-4)


# 3 x 3, stride 1, 64 channels and more in and out, weights that are
# parameters: Winograd's F(2 x 2, 3 x 3) (ops/conv.cpp conv2d_winograd): 4 x 4
# tiles transformed, 16 matmuls over the channels, 2 x 2 outputs back; odd
# sizes (the last tiles overhang), no padding, a batch, 144 output channels, a
# bias with a ReLU after it; new weights set() remake the kept filter transform.
@pytest.mark.parametrize("shape,out,padding,tiles", [((2, 128, 9, 7), 144, 1, (5, 4)), ((1, 128, 6, 8), 128, 0, (2, 3))])
def test_conv2d_winograd(backend, shape, out, padding, tiles):
    g = lumen.Graph()
    x, w, b = g.input("x", shape), g.parameter("w", (out, shape[1], 3, 3)), g.parameter("b", (out,))
    y = F.relu(F.conv2d(x, w, b, 1, padding))
    # It is the Winograd form: the input's transformed tiles [N, TH, TW, 16, C] are a value of the graph.
    assert f"[{shape[0]}, {tiles[0]}, {tiles[1]}, 16, {shape[1]}] f32" in g.to_dot()
    program = lumen.compile(g, [y], backend=backend)
    xv = data(shape, seed=21, low=-1, high=1)
    for seed in (22, 24):
        wv, bv = data((out, shape[1], 3, 3), seed=seed, low=-1, high=1), data((out,), seed=seed + 1)
        program.set("x", xv)
        program.set("w", wv)
        program.set("b", bv)
        program.run()
        want = torch.relu(TF.conv2d(torch.from_numpy(xv), torch.from_numpy(wv), torch.from_numpy(bv), 1, padding)).numpy()
        np.testing.assert_allclose(program.get(y), want, rtol=1e-5, atol=2e-5)
    # Not below 64 input channels, where the transforms cost more than they save, nor for
    # weights that are plain inputs (their transform would be made every run).
    for channels, parameter in ((32, True), (128, False)):
        g = lumen.Graph()
        make = g.parameter if parameter else g.input
        F.conv2d(g.input("x", (1, channels, 8, 8)), make("w", (128, channels, 3, 3)), None, 1, 1)
        assert f"[1, 4, 4, 16, {channels}] f32" not in g.to_dot()


# Output channels per group a multiple of 16: the channels are the SIMD dim,
# the padded input is copied once (rows widened to 16 lanes) and the window
# reduction splits into channels x (KH·KW); strides, dilation, groups, batch,
# rectangular kernels and a bias with a ReLU after it.
@pytest.mark.parametrize("stride,padding,dilation,groups,kernel", [
    (1, 1, 1, 1, (3, 3)), (2, 1, 1, 1, (3, 3)), (1, 2, 2, 1, (3, 3)), (1, 1, 1, 2, (3, 3)), ((2, 1), (0, 2), 1, 1, (3, 5)),
    (1, 0, 1, 1, (1, 1))])
def test_conv2d_channels_as_lanes(backend, stride, padding, dilation, groups, kernel):
    x = Input(data((2, 6, 11, 13), seed=18), layout="permuted")
    w, b = data((32, 6 // groups, *kernel), seed=19), data((32,), seed=20)
    check("conv2d", lambda t, k, c: F.relu(F.conv2d(t, k, c, stride, padding, dilation, groups)),
          lambda t, k, c: torch.relu(TF.conv2d(t, k, c, stride, padding, dilation, groups)), [x, w, b], backend, atol=1e-4)


# A pointwise convolution whose H·W is a multiple of 16 is a matmul in NCHW
# (weights times each image's [C, H·W]); 7 x 7 positions take another form.
@pytest.mark.parametrize("shape,out", [((2, 24, 8, 6), 40), ((1, 16, 28, 28), 24), ((2, 8, 7, 7), 16)], ids=str)
def test_conv2d_pointwise(backend, shape, out):
    x = Input(data(shape, seed=21), layout="permuted")
    w, b = data((out, shape[1], 1, 1), seed=22), data((out,), seed=23)
    check("conv2d", lambda t, k, c: F.conv2d(t, k, c), lambda t, k, c: TF.conv2d(t, k, c), [x, w, b], backend, atol=1e-4)
    check("conv2d", lambda t, k: F.conv2d(t, k), lambda t, k: TF.conv2d(t, k), [x, w], backend, atol=1e-4)


# Depthwise (one input channel per group, kernel up to 4 x 4): products summed
# inline, no window matrix. Larger kernels with strides up to 2: windows in
# output order, one reduction over the taps, the input read through a padded
# view (these 11 x 13 maps) or padded into a buffer (test below); other strides
# as a sum of strided taps; beyond 7 x 7 with a stride, the general form.
@pytest.mark.parametrize("kernel,stride,padding,dilation,multiplier", [
    ((3, 3), 1, 1, 1, 1), ((3, 3), 2, 1, 1, 1), ((3, 3), 1, 2, 2, 2), ((3, 1), 1, (1, 0), 1, 1), ((1, 1), 1, 0, 1, 3),
    ((5, 5), 1, 2, 1, 1), ((5, 5), 1, 0, 1, 2), ((7, 5), 1, (3, 1), 2, 1), ((5, 5), 2, 2, 1, 1), ((5, 3), (2, 1), 1, 1, 2),
    ((5, 5), 2, 1, 2, 2), ((7, 5), 2, (3, 0), 1, 1), ((7, 7), 3, 3, 1, 1), ((9, 9), 2, 4, 1, 1)], ids=str)
def test_conv2d_depthwise(backend, kernel, stride, padding, dilation, multiplier):
    x = Input(data((2, 6, 11, 13), seed=24), layout="permuted")
    w, b = data((6 * multiplier, 1, *kernel), seed=25), data((6 * multiplier,), seed=26)
    check("conv2d", lambda t, k, c: F.conv2d(t, k, c, stride, padding, dilation, 6),
          lambda t, k, c: TF.conv2d(t, k, c, stride, padding, dilation, 6), [x, w, b], backend, atol=1e-4)


# Larger depthwise windows over more than 196 outputs a channel pad their input into a buffer
# first; an input computed before the conv (a ReLU) becomes a buffer of its own either way.
@pytest.mark.parametrize("size,stride,multiplier,computed", [
    ((17, 15), 1, 1, False), ((17, 15), 1, 2, True), ((34, 31), 2, 1, False), ((9, 10), 1, 2, True)], ids=str)
def test_conv2d_depthwise_padded_copy_or_view(backend, size, stride, multiplier, computed):
    x = data((2, 4, *size), seed=27)
    w, b = data((4 * multiplier, 1, 5, 5), seed=28), data((4 * multiplier,), seed=29)
    pre = (lambda t: F.relu(t)) if computed else (lambda t: t)
    tpre = (lambda t: TF.relu(t)) if computed else (lambda t: t)
    check("conv2d", lambda t, k, c: F.conv2d(pre(t), k, c, stride, 2, 1, 4),
          lambda t, k, c: TF.conv2d(tpre(t), k, c, stride, 2, 1, 4), [x, w, b], backend, atol=1e-4)


# Convolutions computed channels-last (positions x channels: a pointwise conv over maps whose
# positions no SIMD width divides, or a 3 x 3 conv) and what follows them, kept channels-last
# (core/layout.h): the ReLU, a depthwise conv reading the activation through its padding, a
# squeeze-excite mean and product, the next pointwise conv.
@pytest.mark.parametrize("size,first,kernel,stride", [
    ((14, 14), 1, 5, 1), ((14, 14), 1, 3, 2), ((7, 7), 1, 5, 1), ((28, 28), 3, 3, 1), ((28, 28), 3, 5, 2)], ids=str)
def test_conv_chain_channels_last(backend, size, first, kernel, stride):
    x = data((2, 8, *size), seed=31, low=-1, high=1)  # (values of order 1 through the whole chain)
    w1, b1 = data((32, 8, first, first), seed=32, low=-0.3, high=0.3), data((32,), seed=33, low=-0.3, high=0.3)
    wd, w2 = data((32, 1, kernel, kernel), seed=34, low=-0.3, high=0.3), data((24, 32, 1, 1), seed=35, low=-0.3, high=0.3)

    def chain(nn, t, a, c, d, e):
        h = nn.relu(nn.conv2d(t, a, c, 1, first // 2))
        h = nn.conv2d(h, d, None, stride, kernel // 2, 1, 32)
        return nn.conv2d(h * nn.adaptive_avg_pool2d(h, 1), e)
    check("conv2d", lambda *a: chain(F, *a), lambda *a: chain(TF, *a), [x, w1, b1, wd, w2], backend, atol=1e-4)


# A depthwise conv of channels-last values reads them through its padding in place: no padded
# copy, so a padding of 2 compiles to as many kernels as none.
@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_conv_of_channels_last_values_makes_no_padded_copy(stride):
    kernels = []
    for padding in (0, 2):
        g = lumen.Graph()
        x, w1, wd = g.input("x", (1, 8, 14, 14)), g.input("w1", (32, 8, 1, 1)), g.input("wd", (32, 1, 5, 5))
        y = F.conv2d(F.relu(F.conv2d(x, w1)), wd, None, stride, padding, 1, 32)
        kernels.append(lumen.compile(g, [y], budget_s=0, tuning_cache=False).stats["kernels"])
    assert kernels[1] == kernels[0], kernels


# An image's first conv (three channels, 3 x 3, stride 2) reads its input through the padding
# instead of making a padded copy: the same values, and no kernel more than without padding.
@pytest.mark.parametrize("stride", [1, 2])
def test_first_conv_reads_through_its_padding(backend, stride):
    x, w, b = data((2, 3, 20, 18), seed=41), data((16, 3, 3, 3), seed=42), data((16,), seed=43)
    check("conv2d", lambda t, k, c: F.conv2d(t, k, c, stride, 1), lambda t, k, c: TF.conv2d(t, k, c, stride, 1),
          [x, w, b], backend, atol=1e-4)
    kernels = []
    for padding in (0, 1):
        g = lumen.Graph()
        y = F.conv2d(g.input("x", x.shape), g.input("w", w.shape), None, stride, padding)
        kernels.append(lumen.compile(g, [y], budget_s=0, tuning_cache=False).stats["kernels"])
    assert kernels[1] == kernels[0], kernels


def test_conv2d_rectangular_and_same(backend):
    x, w = data((1, 3, 8, 10), seed=13), data((5, 3, 3, 5), seed=14)
    check("conv2d", lambda t, k: F.conv2d(t, k, stride=(2, 1), padding=(0, 2)),
          lambda t, k: TF.conv2d(t, k, stride=(2, 1), padding=(0, 2)), [x, w], backend, atol=1e-4)
    check("conv2d", lambda t, k: F.conv2d(t, k, padding="same"), lambda t, k: TF.conv2d(t, k, padding="same"), [x, w], backend, atol=1e-4)


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 1), (3, 2, 2, 3)])
def test_conv1d(backend, stride, padding, dilation, groups):
    x, w = data((2, 6, 33), seed=15), data((9, 6 // groups, 4), seed=16)
    check("conv1d", lambda t, k: F.conv1d(t, k, None, stride, padding, dilation, groups),
          lambda t, k: TF.conv1d(t, k, None, stride, padding, dilation, groups), [x, w], backend, atol=1e-4)


# Stride above 1: one ordinary conv per output phase, interleaved. Kernels shorter than the
# stride leave phases with no taps (zeros plus the bias); uneven strides, crops and groups.
@pytest.mark.parametrize("kernel,stride,padding,output_padding,groups", [
    (2, 2, 0, 0, 1), (2, 3, 0, 0, 1), (4, 2, 1, 0, 2), (5, 3, 2, 2, 1), ((3, 1), (2, 1), (1, 0), (1, 0), 1),
    ((1, 3), (1, 2), (0, 1), (0, 1), 1), (7, 4, 3, 3, 1)], ids=str)
def test_conv_transpose2d_by_phases(backend, kernel, stride, padding, output_padding, groups):
    kernel = kernel if isinstance(kernel, tuple) else (kernel, kernel)
    x, w, b = data((2, 4, 5, 6), seed=20), data((4, 6 // groups) + kernel, seed=21), data((6,), seed=22)
    check("conv_transpose2d", lambda t, k, c: F.conv_transpose2d(t, k, c, stride, padding, output_padding, groups),
          lambda t, k, c: TF.conv_transpose2d(t, k, c, stride, padding, output_padding, groups), [x, w, b], backend,
          atol=1e-4)


@pytest.mark.parametrize("stride,padding,output_padding,groups,dilation", [
    (1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (2, 0, 0, 2, 1), (3, 2, 1, 1, 2), (1, 2, 0, 1, 1)])
def test_conv_transpose2d(backend, stride, padding, output_padding, groups, dilation):
    x, w, b = data((2, 4, 5, 6), seed=17), data((4, 6 // groups, 3, 3), seed=18), data((6,), seed=19)
    check("conv_transpose2d", lambda t, k, c: F.conv_transpose2d(t, k, c, stride, padding, output_padding, groups, dilation),
          lambda t, k, c: TF.conv_transpose2d(t, k, c, stride, padding, output_padding, groups, dilation),
          [x, w, b], backend, atol=1e-4)


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", [
    (2, None, 0, 1, False), (3, 2, 1, 1, False), (3, 2, 1, 1, True), (2, 1, 0, 2, False), ((2, 3), (1, 2), (1, 1), 1, True)])
def test_max_pool2d(backend, kernel, stride, padding, dilation, ceil_mode):
    x = data((2, 3, 9, 8), seed=20)
    check("max_pool2d", lambda t: F.max_pool2d(t, kernel, stride, padding, dilation, ceil_mode),
          lambda t: TF.max_pool2d(t, kernel, stride, padding, dilation, ceil_mode), [x], backend)


# After a convolution (computed positions x channels) with a bias and a ReLU, max pooling runs
# channels-last (channels in SIMD lanes, the pooled value kept [N, OH, OW, C]); on an NCHW input it
# keeps the NCHW form. Both as PyTorch computes them, with ceil_mode and -inf padding at the edges.
@pytest.mark.parametrize("kernel,stride,padding,ceil_mode", [(3, 2, 1, False), (2, None, 0, True), (3, 2, 1, True)])
def test_max_pool2d_after_a_convolution(backend, kernel, stride, padding, ceil_mode):
    x, w, b = data((2, 8, 13, 11), seed=30), data((32, 8, 3, 3), seed=31), data((32,), seed=32)
    conv_pool = lambda f, p: lambda t, k, c: p(f.relu(f.conv2d(t, k, c, 1, 1)), kernel, stride, padding, 1, ceil_mode)
    check("max_pool2d", conv_pool(F, F.max_pool2d), conv_pool(TF, TF.max_pool2d), [x, w, b], backend, atol=1e-4)
    out = torch.nn.functional.max_pool2d(torch.zeros(2, 32, 13, 11), kernel, stride, padding, 1, ceil_mode).shape
    pooled = f"[2, {out[2]}, {out[3]}, 32] f32"
    g = lumen.Graph()
    conv_pool(F, F.max_pool2d)(g.input("x", (2, 8, 13, 11)), g.parameter("w", (32, 8, 3, 3)), g.parameter("b", (32,)))
    assert pooled in g.to_dot()
    g = lumen.Graph()
    F.max_pool2d(g.input("x", (2, 32, 13, 11)), kernel, stride, padding, 1, ceil_mode)
    assert pooled not in g.to_dot()


@pytest.mark.parametrize("kernel,stride,padding,ceil_mode,include", [
    (2, None, 0, False, True), (3, 2, 1, False, True), (3, 2, 1, False, False), (3, 2, 1, True, True),
    (3, 2, 1, True, False), ((2, 3), (2, 1), (1, 0), False, True)])
def test_avg_pool2d(backend, kernel, stride, padding, ceil_mode, include):
    x = data((2, 3, 9, 8), seed=21)
    check("avg_pool2d", lambda t: F.avg_pool2d(t, kernel, stride, padding, ceil_mode, include),
          lambda t: TF.avg_pool2d(t, kernel, stride, padding, ceil_mode, include), [x], backend)


@pytest.mark.parametrize("out", [(1, 1), (3, 4), (9, 8), (4, 3)], ids=str)
def test_adaptive_avg_pool2d(backend, out):
    x = data((2, 3, 9, 8), seed=22)
    check("adaptive_avg_pool2d", lambda t: F.adaptive_avg_pool2d(t, out), lambda t: TF.adaptive_avg_pool2d(t, out), [x], backend)


@pytest.mark.parametrize("size,scale,views", [((12, 15), None, True), (None, 2.0, True), ((3, 5), None, True),
                                               ((9, 5), None, False)], ids=str)
def test_nearest_by_whole_factors_is_a_view(size, scale, views):
    # Repeating each element k times (or keeping every k-th) is a broadcast (or a strided slice)
    # of the input, not a gather of it (16x slower for a 2x upsampling); 6 -> 9 rows is a gather.
    g = lumen.Graph()
    x = g.input("x", (1, 2, 6, 5))
    F.interpolate(x, size, scale, "nearest")
    assert ("Gather" not in g.to_dot()) == views


@pytest.mark.parametrize("size,align,blends", [((12, 15), False, True), ((18, 10), False, True),
                                               ((12, 7), False, False), ((12, 10), True, False)], ids=str)
def test_bilinear_by_whole_factors_blends_neighbours(size, align, blends):
    # Upsampling by a whole factor blends two neighbours at per-phase weights (views and
    # multiply-adds); other sizes, or align_corners, multiply by interpolation matrices (a sum).
    g = lumen.Graph()
    x = g.input("x", (1, 2, 6, 5))
    F.interpolate(x, size, None, "bilinear", align)
    assert ("SumReduce" not in g.to_dot()) == blends


@pytest.mark.parametrize("size,scale,mode,align", [
    ((12, 10), None, "nearest", None), ((4, 3), None, "nearest", None), (None, 2.0, "nearest", None),
    ((12, 10), None, "bilinear", False), ((4, 3), None, "bilinear", False), ((11, 7), None, "bilinear", True),
    (None, 2.0, "bilinear", False), ((3, 5), None, "nearest", None), (None, 3.0, "nearest", None),
    (None, 0.5, "nearest", None), ((9, 15), None, "nearest", None), (None, 3.0, "bilinear", False),
    ((18, 15), None, "bilinear", False), ((12, 7), None, "bilinear", False), ((12, 10), None, "bilinear", True)])
def test_interpolate(backend, size, scale, mode, align):
    x = data((1, 2, 6, 5), seed=23)
    check("interpolate", lambda t: F.interpolate(t, size, scale, mode, align),
          lambda t: TF.interpolate(t, size, scale, mode, align), [x], backend)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("gqa", [False, True])
def test_scaled_dot_product_attention(backend, causal, gqa):
    hk = 2 if gqa else 4
    q, k, v = data((2, 4, 7, 8), seed=24), data((2, hk, 9, 8), seed=25), data((2, hk, 9, 6), seed=26)
    check("scaled_dot_product_attention",
          lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=causal, enable_gqa=gqa),
          lambda a, b, c: TF.scaled_dot_product_attention(a, b, c, is_causal=causal, enable_gqa=gqa), [q, k, v], backend)


def test_sdpa_masks_and_scale(backend):
    q, k, v = data((1, 2, 5, 4), seed=27), data((1, 2, 6, 4), seed=28), data((1, 2, 6, 4), seed=29)
    mask = data((5, 6), lumen.bool_, 30)
    mask[:, 0] = True  # no fully masked rows
    check("scaled_dot_product_attention", lambda a, b, c, m: F.scaled_dot_product_attention(a, b, c, attn_mask=m),
          lambda a, b, c, m: TF.scaled_dot_product_attention(a, b, c, attn_mask=m), [q, k, v, mask], backend)
    bias = data((1, 1, 5, 6), seed=31)
    check("scaled_dot_product_attention", lambda a, b, c, m: F.scaled_dot_product_attention(a, b, c, attn_mask=m, scale=0.3),
          lambda a, b, c, m: TF.scaled_dot_product_attention(a, b, c, attn_mask=m, scale=0.3), [q, k, v, bias], backend)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_mse(backend, reduction):
    logits, target = data((6, 10), seed=32), np.random.default_rng(33).integers(0, 10, size=6).astype(np.int32)
    check("cross_entropy", lambda x, y: F.cross_entropy(x, y, reduction=reduction),
          lambda x, y: TF.cross_entropy(x, y.long(), reduction=reduction), [logits, target], backend)
    check("cross_entropy", lambda x, y: F.cross_entropy(x, y, reduction=reduction, label_smoothing=0.1),
          lambda x, y: TF.cross_entropy(x, y.long(), reduction=reduction, label_smoothing=0.1), [logits, target], backend)
    probs = np.random.default_rng(34).dirichlet(np.ones(10), size=6).astype(np.float32)
    check("cross_entropy", lambda x, y: F.cross_entropy(x, y, reduction=reduction),
          lambda x, y: TF.cross_entropy(x, y, reduction=reduction), [logits, probs], backend)
    spatial, st = data((2, 5, 3, 4), seed=35), np.random.default_rng(36).integers(0, 5, size=(2, 3, 4)).astype(np.int32)
    check("cross_entropy", lambda x, y: F.cross_entropy(x, y, reduction=reduction),
          lambda x, y: TF.cross_entropy(x, y.long(), reduction=reduction), [spatial, st], backend)
    a, b = data((4, 7), seed=37), data((4, 7), seed=38)
    check("mse_loss", lambda x, y: F.mse_loss(x, y, reduction), lambda x, y: TF.mse_loss(x, y, reduction=reduction), [a, b], backend)


def test_nn_errors():
    g = lumen.Graph()
    x = g.input("x", (1, 3, 4, 4))
    expect_error(lambda: F.conv2d(x, g.input("w", (2, 4, 3, 3))), "conv2d", "[1, 3, 4, 4]", "[2, 4, 3, 3]")
    expect_error(lambda: F.conv2d(x, g.input("w2", (2, 3, 5, 5))), "conv2d", "smaller than the kernel")
    expect_error(lambda: F.max_pool2d(x, 6), "max_pool2d")
    expect_error(lambda: F.group_norm(x, 2), "group_norm", "3 channels", "2 groups")
    expect_error(lambda: F.layer_norm(x, (4,), g.input("lw", (5,))), "layer_norm", "weight", "[5]")
    expect_error(lambda: F.cross_entropy(x.reshape(3, 16), g.input("t", (3,), lumen.float32)), "cross_entropy")
    expect_error(lambda: F.scaled_dot_product_attention(x, x, g.input("v", (2, 3))), "scaled_dot_product_attention")
    expect_error(lambda: F.interpolate(x, mode="bicubic", size=(2, 2)), "interpolate", "bicubic")
    expect_error(lambda: F.max_pool2d(x.int(), 2), "max_pool2d", "float")
    expect_error(lambda: bool(x), "no value until the graph is compiled")
