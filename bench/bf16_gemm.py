"""bf16 GEMM rows for `make bench`: C[n, n] = A[n, n] @ B[n, n] with bf16
operands (plain row-major, set once before timing), products summed in fp32,
an fp32 C. lumen compiles the matmul of its widened operands (the precision
pass's form; on a CPU with AVX512-BF16 the search offers the vdpbf16ps path);
oneDNN runs its bf16 matmul primitive (bench/native_peers, impl onednn_bf16);
PyTorch its bf16 matmul (fp32 accumulation, the result rounded to bf16: the
row's accuracy reference, hence the tolerance). Compare with sgemm_<n> (lumen's
fp32 GEMM) from the same run."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from models import Missing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("LUMEN_BUILD", os.path.join(ROOT, "build"))


class Bf16Gemm:
    def __init__(self, n):
        self.name = f"bgemm_{n}"
        self.n = n
        self.flops = 2.0 * n ** 3
        self.bytes = 0.0
        # PyTorch rounds its output to bf16 (2^-9 relative); lumen and oneDNN keep fp32.
        self.tolerance = 2e-2

    def operands(self):
        rng = np.random.default_rng(0)
        return [rng.standard_normal((self.n, self.n)).astype(np.float32) * 0.1 for _ in range(2)]

    def make(self, impl, threads):
        if impl in ("lumen", "lumen_nosearch"):
            return self._lumen(impl == "lumen")
        if impl == "torch":
            return self._torch(threads)
        if impl == "onednn":
            return self._onednn()
        raise Missing("bf16 GEMM rows run lumen, PyTorch and oneDNN")

    def _lumen(self, search):
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import lumen
        g = lumen.Graph()
        a = g.input("a", (self.n, self.n), lumen.bfloat16)
        b = g.input("b", (self.n, self.n), lumen.bfloat16)
        out = a.cast(lumen.float32) @ b.cast(lumen.float32)
        budget = float(os.environ.get("LUMEN_BENCH_BUDGET", "20")) if search else 0.0
        program = lumen.compile(g, [out], budget_s=budget, tuning_cache=search)
        x, y = self.operands()
        program.set("a", x)  # rounded to bf16 once, here
        program.set("b", y)
        program.run()
        report = program.report()
        # Which kernel path ran (the report's bf16 contractions line) and whose schedules were kept.
        path = "bf16 pair dot" if "1 of 1 kernels on the bf16 pair dot path" in report else "f32 FMA fallback"
        schedules = "searched schedules" if "kept the searched schedules" in report else "heuristic schedules"
        stats = program.stats
        return program.run, lambda: program.get("out0"), {"winner": f"{path}, {schedules}",
                                                         "compile_s": stats.get("compile_total_seconds", 0),
                                                         "search_s": stats.get("search_seconds", 0)}

    def _torch(self, threads):
        import torch
        torch.set_num_threads(threads)
        x, y = (torch.from_numpy(v).to(torch.bfloat16) for v in self.operands())
        state = {}

        def call():
            with torch.no_grad():
                state["out"] = torch.matmul(x, y)
        call()
        return call, lambda: state["out"].float().numpy(), {}

    def _onednn(self):
        exe = os.path.join(BUILD, "bench", "native_peers")
        if not os.path.exists(exe):
            raise Missing("build/bench/native_peers was not built (oneDNN or OpenBLAS missing)")
        proc = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

        def ask(line):
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            reply = proc.stdout.readline().strip()
            if reply.startswith("error") or not reply:
                raise Missing(f"oneDNN bf16 matmul: {reply or 'native_peers exited'}")
            return reply
        ask(f"setup bgemm onednn_bf16 {self.n} {self.n} {self.n}")
        state = {"ms": 0.0}

        def call():
            state["ms"] = float(ask("run bgemm"))
        call()
        return call, None, {"self_timed": state}


def bf16_workloads():
    return {w.name: w for w in [Bf16Gemm(2048)]}
