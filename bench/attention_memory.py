"""Attention written with plain ops: lumen's peak arena bytes and run time
against torch.nn.functional.scaled_dot_product_attention on the CPU.

B=1, H=8, D=64 at each sequence length given (default 1024 4096 16384), at
LUMEN_THREADS/torch threads = --threads (default 2). Lumen compiles with the
heuristic schedules (budget 0, --budget to search); sliced execution keeps
the S x S scores one chunk large, so the arena should grow linearly in S.
Not part of `make test` or `make bench`:

    python3 bench/attention_memory.py [--threads 2] [--runs 5] [S ...]
"""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def median_seconds(fn, runs):
    fn()  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1024, 4096, 16384])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.0, help="lumen schedule search seconds")
    args = parser.parse_args()
    os.environ["LUMEN_THREADS"] = str(args.threads)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import numpy as np
    import torch
    import lumen
    import lumen.nn.functional as F

    torch.set_num_threads(args.threads)
    lumen.set_threads(args.threads)
    b, h, d = 1, 8, 64
    print(f"attention B{b} H{h} D{d}, {args.threads} threads, median of {args.runs} runs")
    print(f"{'S':>6} {'arena MiB':>10} {'S*S scores MiB':>15} {'sliced':>6} {'lumen ms':>10} "
          f"{'torch sdpa ms':>14} {'sdpa/lumen':>10} {'max |diff|':>10}")
    for s in args.sizes:
        rng = np.random.default_rng(s)
        arrays = {n: rng.standard_normal((b, h, s, d)).astype(np.float32) for n in "qkv"}
        g = lumen.Graph()
        q, k, v = (g.input(n, (b, h, s, d)) for n in "qkv")
        program = lumen.compile(g, [F.scaled_dot_product_attention(q, k, v)], budget_s=args.budget)
        for n, a in arrays.items():
            program.set(n, a)
        lumen_s = median_seconds(program.run, args.runs)
        stats = program.stats
        tq, tk, tv = (torch.from_numpy(arrays[n]) for n in "qkv")
        with torch.no_grad():
            torch_s = median_seconds(lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv), args.runs)
            want = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv).numpy()
        diff = float(np.abs(program.get("out0") - want).max())
        scores = b * h * s * s * 4 / 2**20
        print(f"{s:>6} {stats.get('arena_bytes', 0) / 2**20:>10.1f} {scores:>15.0f} "
              f"{int(stats.get('sliced_groups', 0)):>6} {lumen_s * 1e3:>10.1f} {torch_s * 1e3:>14.1f} "
              f"{torch_s / lumen_s:>10.2f} {diff:>10.2e}", flush=True)


if __name__ == "__main__":
    main()
