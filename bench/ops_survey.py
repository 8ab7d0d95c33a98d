"""A quick survey of single ops and small compositions: lumen (heuristic
schedules, or searched with LUMEN_SURVEY_BUDGET seconds per case) against
PyTorch eager, each timed as the median of 15 calls on warm inputs. For
finding the weakest cases, not for claims: claims come from `make bench`.

    python3 bench/ops_survey.py [--threads 2] [--only transpose_copy,sum_all] [--interleave]

--interleave alternates lumen and torch calls (40 pairs, each timed call right
after 20 ms of untimed calls of the same implementation) and reports the minimum
of each: steadier than medians on a machine shared with other work.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def cases():
    import lumen
    import lumen.nn.functional as F
    import torch
    tf = torch.nn.functional
    n = 2048
    return [
        ("transpose_copy", [(n, n)], lambda x: x.transpose(0, 1) * 1.0, lambda x: (x.t() * 1.0).contiguous()),
        ("permute_0213", [(8, 512, 16, 64)], lambda x: x.permute(0, 2, 1, 3) * 1.0,
         lambda x: (x.permute(0, 2, 1, 3) * 1.0).contiguous()),
        ("argmax_rows", [(n, n)], lambda x: lumen.argmax(x, -1), lambda x: x.argmax(-1)),
        ("cumsum_rows", [(n, 1024)], lambda x: lumen.cumsum(x, -1), lambda x: x.cumsum(-1)),
        ("softmax_axis0", [(n, n)], lambda x: lumen.softmax(x, 0), lambda x: x.softmax(0)),
        ("sum_all", [(4096, 4096)], lambda x: lumen.sum(x), lambda x: x.sum()),
        ("sum_cols", [(4096, 4096)], lambda x: lumen.sum(x, 0), lambda x: x.sum(0)),
        ("norm_few_rows", [(4, 1 << 20)], lambda x: lumen.sqrt(lumen.sum(x * x, -1)), lambda x: x.norm(dim=-1)),
        ("channel_means", [(32, 64, 56, 56)], lambda x: lumen.mean(x, (0, 2, 3)), lambda x: x.mean((0, 2, 3))),
        ("global_avgpool", [(32, 512, 14, 14)], lambda x: lumen.mean(x, (2, 3)), lambda x: x.mean((2, 3))),
        ("mse_loss", [(n, n), (n, n)], lambda a, b: F.mse_loss(a, b), lambda a, b: tf.mse_loss(a, b)),
        ("var_all", [(n, n)], lambda x: lumen.var(x), lambda x: x.var()),
        ("gelu_erf", [(n, n)], lambda x: F.gelu(x), lambda x: tf.gelu(x)),
        ("layernorm_rows_64", [(65536, 64)], lambda x: F.layer_norm(x, (64,)), lambda x: tf.layer_norm(x, (64,))),
        ("concat", [(n, n), (n, n)], lambda a, b: lumen.cat([a, b], 0), lambda a, b: torch.cat([a, b], 0)),
        ("bmm_64", [(256, 64, 64), (256, 64, 64)], lambda a, b: a @ b, lambda a, b: a @ b),
        ("matmul_AtB", [(1024, 1024), (1024, 1024)], lambda a, b: a.transpose(0, 1) @ b, lambda a, b: a.t() @ b),
        ("linear_weight_input", [(1024, 1024), (1024, 1024)], lambda x, w: F.linear(x, w), lambda x, w: tf.linear(x, w)),
        ("conv1x1", [(8, 256, 28, 28), (256, 256, 1, 1)], lambda x, w: F.conv2d(x, w), lambda x, w: tf.conv2d(x, w)),
        ("depthwise3x3", [(8, 256, 28, 28), (256, 1, 3, 3)], lambda x, w: F.conv2d(x, w, padding=1, groups=256),
         lambda x, w: tf.conv2d(x, w, padding=1, groups=256)),
        ("maxpool2", [(32, 64, 56, 56)], lambda x: F.max_pool2d(x, 2), lambda x: tf.max_pool2d(x, 2)),
        # Found slow by a wider sweep (2026-11-28) and mended: a padded 5x5 window, resampling,
        # a strided transposed conv, a strided 1x1 conv, adaptive pooling, a scan down columns.
        ("avgpool5_pad2", [(8, 64, 56, 56)], lambda x: F.avg_pool2d(x, 5, 1, 2), lambda x: tf.avg_pool2d(x, 5, 1, 2)),
        ("nearest_2x", [(8, 64, 56, 56)], lambda x: F.interpolate(x, scale_factor=2.0, mode="nearest"),
         lambda x: tf.interpolate(x, scale_factor=2.0, mode="nearest")),
        ("bilinear_2x", [(8, 64, 56, 56)], lambda x: F.interpolate(x, scale_factor=2.0, mode="bilinear"),
         lambda x: tf.interpolate(x, scale_factor=2.0, mode="bilinear")),
        ("conv_transpose3x3s2", [(4, 64, 28, 28), (64, 32, 3, 3)], lambda x, w: F.conv_transpose2d(x, w, None, 2, 1, 1),
         lambda x, w: tf.conv_transpose2d(x, w, None, 2, 1, 1)),
        ("conv1x1_stride2", [(4, 64, 56, 56), (128, 64, 1, 1)], lambda x, w: F.conv2d(x, w, None, 2),
         lambda x, w: tf.conv2d(x, w, None, 2)),
        ("adaptive_avgpool_1x1", [(32, 512, 7, 7)], lambda x: F.adaptive_avg_pool2d(x, (1, 1)),
         lambda x: tf.adaptive_avg_pool2d(x, (1, 1))),
        ("cumsum_cols", [(1024, 1024)], lambda x: lumen.cumsum(x, 0), lambda x: x.cumsum(0)),
        ("depthwise5x5", [(4, 64, 56, 56), (64, 1, 5, 5)], lambda x, w: F.conv2d(x, w, padding=2, groups=64),
         lambda x, w: tf.conv2d(x, w, padding=2, groups=64)),
        ("depthwise7x7", [(4, 64, 56, 56), (64, 1, 7, 7)], lambda x, w: F.conv2d(x, w, padding=3, groups=64),
         lambda x, w: tf.conv2d(x, w, padding=3, groups=64)),
        ("depthwise5x5_14", [(8, 240, 14, 14), (240, 1, 5, 5)], lambda x, w: F.conv2d(x, w, padding=2, groups=240),
         lambda x, w: tf.conv2d(x, w, padding=2, groups=240)),
        ("row_max", [(n, n)], lambda x: lumen.amax(x, -1), lambda x: x.amax(-1)),
    ]


def median_ms(fn, runs=15):
    fn()
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2] * 1e3


def interleaved_min_ms(fa, fb, pairs=40, settle_s=0.02):
    """Alternates the two, each timed call right after at least `settle_s` of untimed calls of
    the same one (as bench/run.py does): the other's worker threads, still spinning after its
    calls (PyTorch's OpenMP threads spin for milliseconds), would otherwise take cores from the
    first calls after a switch (one untimed call was not enough: a 7x7 depthwise conv timed
    1.14-1.27 ms that way and 0.56 ms alone)."""
    for _ in range(3):
        fa()
        fb()
    ta, tb = [], []
    for _ in range(pairs):
        for f, times in ((fa, ta), (fb, tb)):
            end = time.perf_counter() + settle_s
            f()
            while time.perf_counter() < end:
                f()
            start = time.perf_counter()
            f()
            times.append(time.perf_counter() - start)
    return min(ta) * 1e3, min(tb) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", default="")
    parser.add_argument("--interleave", action="store_true")
    args = parser.parse_args()
    import lumen
    import torch
    lumen.set_threads(args.threads)
    torch.set_num_threads(args.threads)
    budget = float(os.environ.get("LUMEN_SURVEY_BUDGET", "0"))
    only = set(filter(None, args.only.split(",")))
    rng = np.random.default_rng(0)
    print(f"{'case':20s} {'lumen ms':>9s} {'torch ms':>9s} {'speed-up':>9s} {'rel. error':>10s}")
    for name, shapes, lumen_fn, torch_fn in cases():
        if only and name not in only:
            continue
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        g = lumen.Graph()
        inputs = [g.input(f"x{i}", s) for i, s in enumerate(shapes)]
        program = lumen.compile(g, [lumen_fn(*inputs)], budget_s=budget, tuning_cache=False)
        for i, a in enumerate(arrays):
            program.set(f"x{i}", a)
        tensors = [torch.from_numpy(a) for a in arrays]
        program.run()
        want = torch_fn(*tensors).numpy()
        error = float(np.max(np.abs(program.get("out0") - want)) / (np.max(np.abs(want)) + 1e-9))
        if args.interleave:
            ours, theirs = interleaved_min_ms(program.run, lambda: torch_fn(*tensors))
        else:
            ours, theirs = median_ms(program.run), median_ms(lambda: torch_fn(*tensors))
        print(f"{name:20s} {ours:9.3f} {theirs:9.3f} {theirs / ours:8.2f}x {error:10.1e}")


if __name__ == "__main__":
    main()
