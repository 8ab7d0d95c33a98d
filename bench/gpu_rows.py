"""CUDA rows: lumen's cuda backend beside PyTorch CUDA (cuBLAS, SDPA, eager
Llama) in one run on one GPU. Run where an NVIDIA GPU exists (the device
check, scripts/device/gpu_check, runs it); elsewhere it says so and exits 0.

    python3 bench/gpu_rows.py [--runs 20] [--json out.json] [--only sgemm,softmax] [--budget 10]

Every row: median milliseconds after warm-up runs, lumen's output compared
with PyTorch's, and the ratio PyTorch ms / lumen ms (above 1: lumen faster).
lumen's time is a whole `Program.run()`: its kernels on device memory, inputs
already on the device (set once), the output copied back to the host;
PyTorch's is the op on device tensors, synchronised, output left on the
device, and again with the output copied to the host (what lumen's run
includes). Schedules are lumen's heuristic ones unless --budget gives the
schedule search seconds per program (candidates timed on the GPU)."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("LUMEN_PYTHON_DIR") or os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))


def median_ms(fn, runs, warmup=3, sync=None):
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


BUDGET = 0.0  # --budget: schedule search seconds per program


def lumen_program(build, inputs):
    """A compiled cuda program with `inputs` set once; returns (run, output)."""
    import lumen
    g = lumen.Graph()
    dtypes = {np.dtype(np.float32): lumen.float32, np.dtype(np.float16): lumen.float16}
    tensors = {name: g.input(name, list(a.shape), dtype=dtypes[a.dtype]) for name, a in inputs.items()}
    y = build(lumen, tensors)
    start = time.perf_counter()
    program = g.compile([y], backend="cuda", budget_s=BUDGET, tuning_cache=False)
    compile_s = time.perf_counter() - start
    for name, a in inputs.items():
        program.set(name, a)

    def run():
        program.run()

    def output():
        return np.asarray(program.get(program.output_names[0]))
    return run, output, compile_s


def row(name, runs, inputs, build_lumen, torch_fn, rtol, atol):
    try:
        r = measured_row(name, runs, inputs, build_lumen, torch_fn, rtol, atol)
    except Exception as e:  # noqa: BLE001 (report the row as failed, keep the others)
        r = {"row": name, "error": f"{type(e).__name__}: {e}"[:300]}
    print("row:", json.dumps(r), flush=True)  # as it comes: a run cut short keeps what it measured
    return r


def measured_row(name, runs, inputs, build_lumen, torch_fn, rtol, atol):
    import torch
    out = {"row": name}
    run, output, compile_s = lumen_program(build_lumen, inputs)
    out["lumen_compile_s"] = round(compile_s, 2)
    out["lumen_ms"] = median_ms(run, runs)
    got = output()
    dev = {k: torch.from_numpy(v).cuda() for k, v in inputs.items()}
    want = torch_fn(**dev)
    out["torch_ms"] = median_ms(lambda: torch_fn(**dev), runs, sync=torch.cuda.synchronize)
    # As lumen's run does: the output copied to (pageable) host memory.
    out["torch_to_host_ms"] = median_ms(lambda: torch_fn(**dev).cpu(), runs, sync=torch.cuda.synchronize)
    want = want.float().cpu().numpy()
    err = np.abs(got.astype(np.float32) - want)
    out["max_abs_err"] = float(err.max())
    out["agrees"] = bool(np.all(err <= atol + rtol * np.abs(want)))
    out["ratio"] = out["torch_ms"] / out["lumen_ms"]
    return out


def kernel_rows(runs, only):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    rng = np.random.default_rng(0)
    rows = []

    def want(name):
        return not only or name in only
    if want("sgemm"):
        for n in (1024, 4096):
            a = rng.standard_normal((n, n), dtype=np.float32)
            b = rng.standard_normal((n, n), dtype=np.float32)
            rows.append(row(f"sgemm {n}^3 f32 (cuBLAS)", runs, {"a": a, "b": b},
                            lambda L, t: L.matmul(t["a"], t["b"]), lambda a, b: a @ b, 1e-3, 1e-2))
    if want("hgemm"):
        n = 4096
        a = rng.standard_normal((n, n), dtype=np.float32).astype(np.float16)
        b = rng.standard_normal((n, n), dtype=np.float32).astype(np.float16)
        rows.append(row(f"hgemm {n}^3 f16 (cuBLAS, tensor cores)", runs, {"a": a, "b": b},
                        lambda L, t: L.matmul(t["a"], t["b"]), lambda a, b: a @ b, 2e-2, 1.0))
    if want("softmax"):
        x = rng.standard_normal((4096, 4096), dtype=np.float32)
        rows.append(row("softmax 4096x4096 f32", runs, {"x": x}, lambda L, t: L.softmax(t["x"], -1),
                        lambda x: torch.softmax(x, -1), 1e-4, 1e-6))
    if want("attention"):
        for s in (1024, 4096):
            q, k, v = (rng.standard_normal((1, 8, s, 64), dtype=np.float32) for _ in range(3))
            rows.append(row(f"attention causal B1 H8 S{s} D64 f32 (SDPA)", runs, {"q": q, "k": k, "v": v},
                            lambda L, t: L.nn.functional.scaled_dot_product_attention(t["q"], t["k"], t["v"],
                                                                                       is_causal=True),
                            lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
                            1e-3, 1e-4))
    return rows


def llama_decode_row(steps=32):
    """The bench's 110M Llama (bench/models.py, seeded random weights), 32 decode steps after a 128-token prompt."""
    import torch
    import lumen
    from models import DECODE_FROM, llama_files, prompt_tokens
    from transformers import LlamaForCausalLM
    from transformers.cache_utils import DynamicCache
    files = llama_files()
    start = time.perf_counter()
    r = lumen.models.Llama(files["dir"], capacity=DECODE_FROM + steps, backend="cuda", budget_s=BUDGET,
                           tuning_cache=False)
    compile_s = time.perf_counter() - start
    prompt = prompt_tokens(DECODE_FROM, 32000)
    nexts = [(i * 13 + 5) % 32000 for i in range(steps)]

    def lumen_decode():
        r.reset()
        r.forward(prompt)
        start = time.perf_counter()
        for t in nexts:
            last = r.forward([t])
        return (time.perf_counter() - start) * 1e3, np.asarray(last)
    model = LlamaForCausalLM.from_pretrained(files["dir"]).eval().cuda()

    def torch_decode():
        kv = DynamicCache()
        with torch.no_grad():
            model(torch.tensor([prompt]).cuda(), past_key_values=kv, use_cache=True)
            torch.cuda.synchronize()
            start = time.perf_counter()
            for t in nexts:
                out = model(torch.tensor([[t]]).cuda(), past_key_values=kv, use_cache=True)
            torch.cuda.synchronize()
        return (time.perf_counter() - start) * 1e3, out.logits[0, -1].float().cpu().numpy()
    lumen_runs = [lumen_decode() for _ in range(4)]
    torch_runs = [torch_decode() for _ in range(4)]
    lumen_ms = statistics.median(ms for ms, _ in lumen_runs[1:]) / steps
    torch_ms = statistics.median(ms for ms, _ in torch_runs[1:]) / steps
    err = float(np.abs(lumen_runs[-1][1] - torch_runs[-1][1]).max())
    return {"row": f"Llama 110M f32 decode (ms/token, {steps} steps from {DECODE_FROM})", "lumen_ms": lumen_ms,
            "torch_ms": torch_ms, "ratio": torch_ms / lumen_ms, "max_abs_err": err, "agrees": err < 1e-2,
            "lumen_compile_s": round(compile_s, 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--only", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--budget", type=float, default=0.0, help="schedule search seconds per program (0: heuristic)")
    args = ap.parse_args()
    global BUDGET
    BUDGET = args.budget
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
    except Exception as e:  # noqa: BLE001 (any reason there is no GPU)
        print(f"gpu_rows: no CUDA GPU here ({e}); the CUDA rows are skipped")
        return 0
    only = set(filter(None, args.only.split(",")))
    rows = kernel_rows(args.runs, only)
    if not only or "llama" in only:
        try:
            rows.append(llama_decode_row())
        except Exception as e:  # noqa: BLE001 (report the row as failed, keep the others)
            rows.append({"row": "Llama 110M f32 decode", "error": f"{type(e).__name__}: {e}"})
        print("row:", json.dumps(rows[-1]), flush=True)
    gpu = torch.cuda.get_device_name(0)
    print(f"\nGPU: {gpu}; torch {torch.__version__}; lumen search budget {BUDGET:g} s per program\n")
    print("| row | lumen ms | PyTorch ms | PyTorch ÷ lumen | PyTorch + copy to host ms | ÷ lumen "
          "| agrees (max abs err) | lumen compile s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if "error" in r:
            print(f"| {r['row']} | failed: {r['error']} | | | | | | |")
            continue
        host = r.get("torch_to_host_ms")
        host_cols = f"{host:.3f} | {host / r['lumen_ms']:.3f}x" if host else "- | -"
        print(f"| {r['row']} | {r['lumen_ms']:.3f} | {r['torch_ms']:.3f} | {r['ratio']:.3f}x | {host_cols} | "
              f"{'yes' if r['agrees'] else 'NO'} ({r['max_abs_err']:.1e}) | {r['lumen_compile_s']} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": gpu, "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
