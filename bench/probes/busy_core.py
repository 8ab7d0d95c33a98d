"""How much a busy core slows lumen's 2-thread programs: each workload timed with the machine as it is and with
a busy loop pinned to the last CPU, alternately, medians of 7 rounds. A pool that waits for its slowed thread
takes ~2x; one whose other thread takes the slowed one's blocks takes less (1.33x if the busy core gives
lumen half its time).

  python3 bench/probes/busy_core.py          # this checkout
  WT=/path/to/checkout python3 bench/probes/busy_core.py   # another checkout's build
"""
import multiprocessing
import os
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get("WT", os.path.join(os.path.dirname(__file__), "..", "..")), "python"))
import numpy as np  # noqa: E402
import lumen  # noqa: E402


def spin(cpu, seconds):
    os.sched_setaffinity(0, {cpu})
    end = time.time() + seconds
    while time.time() < end:
        pass


def median_ms(f, n=15):
    start = time.perf_counter()
    while time.perf_counter() - start < 0.05:
        f()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)) * 1e3


def workloads():
    rng = np.random.default_rng(0)
    for n in (256, 1024):
        g = lumen.Graph()
        a, b = g.input("a", (n, n)), g.input("b", (n, n))
        p = lumen.compile(g, [a @ b], budget_s=0, tuning_cache=False)
        p.set("a", rng.standard_normal((n, n)).astype(np.float32))
        p.set("b", rng.standard_normal((n, n)).astype(np.float32))
        yield f"sgemm_{n}", p.run
    g = lumen.Graph()
    x = g.input("x", (64, 1024))
    h = x
    for i in range(4):  # an MLP of small kernels: matmul, bias, relu
        h = (h @ g.parameter(f"w{i}", (1024, 1024)) + g.parameter(f"b{i}", (1024,))).relu()
    p = lumen.compile(g, [h], budget_s=0, tuning_cache=False)
    for i in range(4):
        p.set(f"w{i}", rng.standard_normal((1024, 1024)).astype(np.float32) * 0.03)
        p.set(f"b{i}", rng.standard_normal(1024).astype(np.float32))
    p.set("x", rng.standard_normal((64, 1024)).astype(np.float32))
    yield "mlp_b64", p.run


def main():
    lumen.set_threads(2)
    cpu = max(os.sched_getaffinity(0))
    for name, run in workloads():
        quiet, busy = [], []
        for _ in range(7):
            quiet.append(median_ms(run))
            hog = multiprocessing.Process(target=spin, args=(cpu, 30))
            hog.start()
            time.sleep(0.05)
            busy.append(median_ms(run))
            hog.terminate()
            hog.join()
        q, b = float(np.median(quiet)), float(np.median(busy))
        print(f"{name}: quiet {q:.3f} ms, CPU {cpu} busy {b:.3f} ms: {b / q:.2f}x", flush=True)


if __name__ == "__main__":
    main()
