"""Distributed rows for `make bench` (lumen/dist, docs/distributed.md).

- llama110m_{prefill,decode}_2ranks: the 110M Llama (bench/models.py) on one
  rank with 2 threads (`lumen`) against 2 ranks with 1 thread each, tensor
  parallel (`lumen_tp2`) and pipeline (`lumen_pp2`), under mpirun on this
  machine. The 2-rank side runs in a peer process (bench/dist_peer.py), asked
  for one timed call at a time, interleaved with the 1-rank runs like the
  llama.cpp peer. 1-thread rows: not run (2 ranks need 2 cores).
- allreduce: bus bandwidth per message size through lumen's Communicator
  against plain MPI loops in the same run (build/bench/dist_allreduce).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import models

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("LUMEN_BUILD", os.path.join(ROOT, "build"))
DIST_IMPLS = ["lumen_tp2", "lumen_pp2"]
MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root", "--mca", "btl", "self,vader,tcp", "--bind-to", "none", "-np", "2"]


def mpirun_missing():
    if shutil.which("mpirun") is None:
        return "mpirun not found (scripts/setup installs openmpi-bin)"
    try:
        import lumen
        if not hasattr(lumen._lumen, "dist"):
            return "lumen was built without lumen/dist"
    except ImportError as e:
        return f"lumen does not import: {e}"
    return None


class DistPeer(models.LlamaCppPeer):
    """bench/dist_peer.py under mpirun: 2 ranks, 1 thread each."""

    def __init__(self, model, plan, capacity, vocab):  # noqa: super().__init__ starts llama.cpp: not called
        env = {k: v for k, v in os.environ.items()}
        for var in ("OMP_NUM_THREADS", "LUMEN_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = "1"
        script = os.path.join(ROOT, "bench", "dist_peer.py")
        self.proc = subprocess.Popen([*MPIRUN, sys.executable, script, model, plan, str(capacity), str(vocab)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        ready = self.proc.stdout.readline().strip()
        if ready != "ready":
            raise RuntimeError(f"the 2-rank peer did not start ({ready or 'it exited'})")


class DistLlamaWorkload(models.LlamaWorkload):
    def make(self, impl, threads):
        if impl == "lumen":  # one rank, `threads` threads
            return self._lumen(threads, True)
        if impl not in DIST_IMPLS:
            raise models.Missing("not expressed (a distributed row: lumen on one rank and on two)")
        if threads != 2:
            raise models.Missing("not expressed: 2 ranks x 1 thread are compared with 1 rank x 2 threads")
        why = mpirun_missing()
        if why:
            raise models.Missing(why)
        capacity = max(models.DECODE_FROM + models.DECODE_STEPS, self.prompt)
        peer = DistPeer(models.llama_files()["dir"], impl[len("lumen_"):-1], capacity, self.vocab)
        command = f"prefill {self.prompt}" if self.mode == "prefill" else f"decode {models.DECODE_FROM} {models.DECODE_STEPS}"
        state = {"ms": 0.0}

        def call():
            state["ms"] = float(peer.ask(command))
        call()
        return call, peer.logits, {"self_timed": state}


def dist_workloads():
    return [DistLlamaWorkload("llama110m_prefill_2ranks", "prefill", "fp32"),
            DistLlamaWorkload("llama110m_decode_2ranks", "decode", "fp32")]


def run_allreduce(rounds=7):
    """build/bench/dist_allreduce under mpirun: a list of rows, or a dict with the reason it did not run."""
    exe = os.path.join(BUILD, "bench", "dist_allreduce")
    if not os.path.exists(exe) or shutil.which("mpirun") is None:
        return {"missing": "needs mpirun and build/bench/dist_allreduce (lumen built with lumen/dist)"}
    print("bench: all-reduce through lumen and plain MPI, 2 ranks", file=sys.stderr)
    out = subprocess.run([*MPIRUN, exe, str(rounds)], capture_output=True, text=True, timeout=1200)
    if out.returncode != 0:
        return {"missing": (out.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def render_dist(data):
    lines = []
    rows = [r for r in data["results"] if r["workload"].endswith("_2ranks") and "tokens_per_s" in r]
    if rows:
        lines += ["## Distributed: 2 ranks x 1 thread against 1 rank x 2 threads", "",
                  "The 110M Llama (seeded random weights, f32) on this machine: `lumen` one rank with 2 threads; "
                  "`lumen_tp2` tensor parallel and `lumen_pp2` pipeline, 2 ranks (mpirun, loopback) with 1 thread each. "
                  "Tokens per second (ratio to `lumen`).", "", "| workload | lumen | lumen_tp2 | lumen_pp2 |",
                  "| --- | --- | --- | --- |"]
        for name in dict.fromkeys(r["workload"] for r in rows):
            by = {r["impl"]: r for r in rows if r["workload"] == name}
            if "lumen" not in by:
                continue
            lt = by["lumen"]["tokens_per_s"]
            cells = [f"{lt:.1f}"]
            for impl in DIST_IMPLS:
                r = by.get(impl)
                cells.append("—" if r is None else f"{r['tokens_per_s']:.1f} ({r['tokens_per_s'] / lt:.2f}×)")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    ar = data.get("allreduce")
    if ar is None:
        return lines
    lines += ["## Distributed: all-reduce bus bandwidth (2 ranks, loopback)", ""]
    if isinstance(ar, dict):
        return lines + [f"Not run: {ar['missing']}", ""]
    lines += ["f32 sum, bus bandwidth = bytes x 2 (n-1)/n / time, medians of interleaved rounds. `lumen`: the "
              "Communicator's non-blocking all-reduce, waited on (what DistProgram does); `MPI_Allreduce`: a plain "
              "blocking loop; `MPI_Iallreduce`: MPI_Iallreduce + MPI_Wait, the MPI operation lumen starts (overhead "
              "= lumen time / that time - 1).", "",
              "| bytes | lumen GB/s | MPI_Allreduce GB/s | MPI_Iallreduce GB/s | lumen overhead vs Iallreduce | vs Allreduce |",
              "| --- | --- | --- | --- | --- | --- |"]
    for r in ar:
        lines.append(f"| {r['bytes']} | {r['lumen_busbw_gbs']:.2f} | {r['mpi_busbw_gbs']:.2f} | "
                     f"{r['mpi_nonblocking_busbw_gbs']:.2f} | {100 * r['overhead_vs_iallreduce']:+.1f}% | "
                     f"{100 * r['overhead_vs_allreduce']:+.1f}% |")
    return lines + [""]
