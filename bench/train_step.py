"""Training-step workloads for `make bench`: one optimizer step (forward,
backward, AdamW update) of an MLP (64-256-256-10, batch 256) and of a small
GPT (2 pre-norm blocks, d=128, 4 heads, batch 16 x 64 characters), in lumen
(lumen.train.Trainer: one compiled Program, parameters and optimizer state
updated in place), PyTorch eager and torch.compile. Rows carry the step's
peak memory: lumen's arena plus its state buffers; PyTorch's parameters,
gradients, optimizer state and the activations autograd saved."""
from __future__ import annotations

import os
import sys

import numpy as np

from models import Missing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _mlp_params(rng):
    sizes = (64, 256, 256, 10)
    p = {}
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        p[f"w{i}"] = (rng.standard_normal((b, a)) / np.sqrt(a)).astype(np.float32)
        p[f"b{i}"] = np.zeros(b, np.float32)
    return p


def _mlp_loss(fn, relu, p, x, y):
    h = x
    for i in range(3):
        h = fn.linear(h, p[f"w{i}"], p[f"b{i}"])
        if i < 2:
            h = relu(h)
    return fn.cross_entropy(h, y)


D, HEADS, LAYERS, T, B, VOCAB = 128, 4, 2, 64, 16, 96


def _gpt_params(rng):
    n = lambda *s: (rng.standard_normal(s) * 0.02).astype(np.float32)  # noqa: E731
    one, zero = (lambda k: np.ones(k, np.float32)), (lambda k: np.zeros(k, np.float32))
    p = {"tok": n(VOCAB, D), "pos": n(T, D), "lnf_w": one(D), "lnf_b": zero(D), "head": n(VOCAB, D)}
    for i in range(LAYERS):
        p.update({f"l{i}.ln1_w": one(D), f"l{i}.ln1_b": zero(D), f"l{i}.qkv_w": n(3 * D, D), f"l{i}.qkv_b": zero(3 * D),
                  f"l{i}.proj_w": n(D, D), f"l{i}.proj_b": zero(D), f"l{i}.ln2_w": one(D), f"l{i}.ln2_b": zero(D),
                  f"l{i}.fc_w": n(4 * D, D), f"l{i}.fc_b": zero(4 * D), f"l{i}.out_w": n(D, 4 * D), f"l{i}.out_b": zero(D)})
    return p


def _gpt_loss(fn, relu, p, idx, targets):
    del relu
    x = fn.embedding(idx, p["tok"]) + p["pos"]
    for i in range(LAYERS):
        h = fn.layer_norm(x, (D,), p[f"l{i}.ln1_w"], p[f"l{i}.ln1_b"])
        qkv = fn.linear(h, p[f"l{i}.qkv_w"], p[f"l{i}.qkv_b"]).reshape(B, T, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
        attn = fn.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
        x = x + fn.linear(attn.permute(0, 2, 1, 3).reshape(B, T, D), p[f"l{i}.proj_w"], p[f"l{i}.proj_b"])
        h = fn.layer_norm(x, (D,), p[f"l{i}.ln2_w"], p[f"l{i}.ln2_b"])
        x = x + fn.linear(fn.gelu(fn.linear(h, p[f"l{i}.fc_w"], p[f"l{i}.fc_b"])), p[f"l{i}.out_w"], p[f"l{i}.out_b"])
    x = fn.layer_norm(x, (D,), p["lnf_w"], p["lnf_b"])
    return fn.cross_entropy(fn.linear(x, p["head"]).reshape(B * T, -1), targets.reshape(B * T))


class TrainStepWorkload:
    """One AdamW training step; `make(impl, threads)` builds (call, get, info) like bench/models.py."""

    def __init__(self, name, params, loss, batch):
        self.name, self._params, self._loss, self._batch = name, params, loss, batch
        self.tolerance = float("inf")  # states drift apart over many timed steps: no output comparison

    def make(self, impl, threads):
        rng = np.random.default_rng(0)
        params = self._params(rng)
        batch = self._batch(rng)
        if impl in ("lumen", "lumen_nosearch"):
            return self._lumen(params, batch, threads, impl == "lumen")
        if impl in ("torch", "torch_compile"):
            return self._torch(params, batch, threads, impl == "torch_compile")
        raise Missing("not expressed")

    def _lumen(self, params, batch, threads, search):
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import lumen
        import lumen.nn.functional as F
        lumen.set_threads(threads)
        specs = {k: (v.shape, lumen.int32 if v.dtype.kind in "iu" else lumen.float32) for k, v in batch.items()}
        budget = float(os.environ.get("LUMEN_BENCH_BUDGET", "20")) if search else 0.0
        trainer = lumen.train.Trainer(lambda p, b: self._loss(F, lumen.relu, p, *b.values()), params, specs,
                                      optimizer="adamw", lr=1e-3, weight_decay=0.01, budget_s=budget, tuning_cache=search)
        trainer.step(batch)
        stats = trainer.stats
        state_bytes = sum(trainer.parameter(n).nbytes for n in trainer.state_names)
        info = {"peak_bytes": int(stats.get("arena_bytes", 0)) + state_bytes,
                "compile_s": stats.get("compile_total_seconds", 0), "search_s": stats.get("search_seconds", 0)}
        return (lambda: trainer.step(batch)), (lambda: None), info

    def _torch(self, params, batch, threads, compiled):
        import torch
        torch.set_num_threads(threads)
        import torch.nn.functional as TF
        tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
        tb = [torch.from_numpy(v).long() if v.dtype.kind in "iu" else torch.from_numpy(v) for v in batch.values()]
        opt = torch.optim.AdamW(list(tp.values()), lr=1e-3, weight_decay=0.01)
        loss_fn = (lambda *b: self._loss(TF, torch.relu, tp, *b))
        if compiled:
            loss_fn = torch.compile(loss_fn)
        saved = {}

        def pack(t):
            saved[t.data_ptr()] = t.numel() * t.element_size()
            return t

        def step():
            opt.zero_grad(set_to_none=False)
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                loss = loss_fn(*tb)
            loss.backward()
            opt.step()
        step()
        step()
        tensor_bytes = sum(v.numel() * 4 for v in tp.values())
        # Parameters, gradients and AdamW's two slots, plus what autograd saved
        # (torch.compile's compiled graph may save tensors the hook does not see).
        info = {"peak_bytes": int(4 * tensor_bytes + sum(saved.values()))}
        return step, (lambda: None), info


def train_workloads():
    def mlp_batch(rng):
        return {"x": rng.standard_normal((256, 64)).astype(np.float32), "y": rng.integers(0, 10, 256).astype(np.int32)}

    def gpt_batch(rng):
        return {"idx": rng.integers(0, VOCAB, (B, T)).astype(np.int32),
                "targets": rng.integers(0, VOCAB, (B, T)).astype(np.int32)}

    rows = [TrainStepWorkload("train_step_mlp", _mlp_params, _mlp_loss, mlp_batch),
            TrainStepWorkload("train_step_gpt_small", _gpt_params, _gpt_loss, gpt_batch)]
    return {w.name: w for w in rows}


def render_train_memory(data):
    """Markdown: each training row's peak memory (lumen: arena plus parameters and optimizer state; PyTorch:
    parameters, gradients, optimizer state and what autograd saved) side by side, same run."""
    rows = [r for r in data["results"] if r["workload"].startswith("train_step_") and "peak_bytes" in r]
    if not rows:
        return []
    impls = [i for i in ("lumen", "lumen_nosearch", "torch", "torch_compile") if any(r["impl"] == i for r in rows)]
    lines = ["## Training step: peak memory", "",
             "lumen: the Program's arena (activations, gradients, temporaries) plus parameters and optimizer state; "
             "PyTorch: parameters, gradients, AdamW's two slots and the tensors autograd saved for backward. "
             "Cells: MiB (lumen / peer).", "",
             "| workload | threads | " + " | ".join(impls) + " |", "|" + " --- |" * (len(impls) + 2)]
    for name in dict.fromkeys(r["workload"] for r in rows):
        for t in sorted({r["threads"] for r in rows if r["workload"] == name}):
            by = {r["impl"]: r["peak_bytes"] for r in rows if r["workload"] == name and r["threads"] == t}
            if "lumen" not in by:
                continue
            cells = [f"{by['lumen'] / 2**20:.1f}"] + [
                "—" if i not in by else f"{by[i] / 2**20:.1f} ({by['lumen'] / by[i]:.2f}×)" for i in impls[1:]]
            lines.append(f"| {name} | {t} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines
