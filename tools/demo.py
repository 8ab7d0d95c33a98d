#!/usr/bin/env python3
"""`make demo`: lumen's main job on a built-in default.

A small Llama-shaped decoder with seeded random weights (built with Hugging
Face transformers and saved as safetensors; nothing is downloaded) is compiled
by lumen twice — with heuristic schedules, then with schedule search under a
short budget — and generates text tokens greedily. The same weights run in
PyTorch. The demo checks that both produce the same tokens and prints how fast
each one is.

  tools/demo.py [--budget SECONDS] [--tokens N]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

CONFIG = dict(vocab_size=8192, hidden_size=512, intermediate_size=1408, num_hidden_layers=6, num_attention_heads=8,
              num_key_value_heads=4, max_position_embeddings=512, tie_word_embeddings=False)
PROMPT = [1] + [(i * 7919 + 11) % 8192 for i in range(63)]


def build_model(path):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(2026)
    model = LlamaForCausalLM(LlamaConfig(**CONFIG)).eval()
    model.save_pretrained(path)
    return model


def median_seconds(fn, runs=7):
    fn()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def time_lumen(runner, tokens):
    def prefill():
        runner.reset()
        runner.forward(PROMPT)
    pre = median_seconds(prefill)
    runner.reset()
    out, _ = runner.generate(PROMPT, max_new_tokens=tokens)

    def decode():
        runner.reset()
        runner.generate(PROMPT, max_new_tokens=tokens)
    total = median_seconds(decode, 3)
    return out, len(PROMPT) / pre, (tokens - 1) / max(total - pre, 1e-9)


def time_torch(model, tokens):
    import torch
    from transformers.cache_utils import DynamicCache
    ids = torch.tensor([PROMPT])

    def generate():
        cache = DynamicCache()
        logits = model(ids, past_key_values=cache, use_cache=True).logits[0, -1]
        out = []
        for i in range(tokens):
            nxt = int(torch.argmax(logits))
            out.append(nxt)
            if i + 1 < tokens:
                logits = model(torch.tensor([[nxt]]), past_key_values=cache, use_cache=True).logits[0, -1]
        return out
    with torch.no_grad():
        pre = median_seconds(lambda: model(ids))
        out = generate()
        total = median_seconds(generate, 3)
    return out, len(PROMPT) / pre, (tokens - 1) / max(total - pre, 1e-9)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=40.0, help="seconds of schedule search (default 40)")
    parser.add_argument("--tokens", type=int, default=48, help="tokens to generate (default 48)")
    args = parser.parse_args()

    import numpy as np
    import torch
    import lumen
    torch.set_num_threads(os.cpu_count() or 1)
    info = lumen.cpu_info()
    print(f"lumen demo on {info['model']} ({info['threads']} threads, {info['features']})")
    with tempfile.TemporaryDirectory(prefix="lumen-demo-") as tmp:
        path = os.path.join(tmp, "llama")
        model = build_model(path)
        params = sum(p.numel() for p in model.parameters())
        print(f"model: Llama-shaped decoder, {CONFIG['num_hidden_layers']} layers, dim {CONFIG['hidden_size']}, "
              f"{CONFIG['num_attention_heads']} heads ({CONFIG['num_key_value_heads']} kv), {params / 1e6:.1f}M parameters, "
              f"seeded random weights (safetensors in {path})")
        print(f"task: prefill a {len(PROMPT)}-token prompt, then generate {args.tokens} tokens greedily "
              f"(KV cache as persistent state, position as a dynamic dim)\n")

        # A private tuning cache: the demo shows a search from scratch, not yesterday's results.
        cache = os.path.join(tmp, "tuning.db")
        start = time.perf_counter()
        plain = lumen.models.Llama(path, capacity=256, budget_s=0, tuning_cache=False)
        plain_compile = time.perf_counter() - start
        print(f"[1/3] compiled with heuristic schedules in {plain_compile:.1f} s "
              f"({int(plain.stats['decode']['kernels'])} decode kernels, {int(plain.stats['prefill']['kernels'])} prefill kernels)")
        plain_tokens, plain_pre, plain_dec = time_lumen(plain, args.tokens)

        print(f"[2/3] searching schedules for {args.budget:.0f} s (each candidate compiled, checked against the "
              f"reference interpreter, and timed) ...", flush=True)
        start = time.perf_counter()
        tuned = lumen.models.Llama(path, capacity=256, budget_s=args.budget, tuning_cache=True, cache_path=cache)
        tuned_compile = time.perf_counter() - start
        searched = [ln for ln in tuned.report().splitlines() if ln.startswith("search:")]
        for ln in searched:
            print("      " + ln)
        tuned_tokens, tuned_pre, tuned_dec = time_lumen(tuned, args.tokens)
        start = time.perf_counter()
        lumen.models.Llama(path, capacity=256, budget_s=args.budget, tuning_cache=True, cache_path=cache)
        warm = time.perf_counter() - start
        print(f"      compiled in {tuned_compile:.1f} s; compiling again with the warm tuning cache: {warm:.2f} s")

        print("[3/3] PyTorch eager on the same weights ...", flush=True)
        torch_tokens, torch_pre, torch_dec = time_torch(model, args.tokens)

        same = tuned_tokens == torch_tokens == plain_tokens
        with torch.no_grad():
            ref = model(torch.tensor([PROMPT])).logits[0].numpy()
        tuned.reset()
        err = float(np.abs(tuned.forward_all(PROMPT)[0] - ref).max())
        print()
        print(f"{'':24}{'prefill tokens/s':>18}{'decode tokens/s':>18}")
        print(f"{'lumen (searched)':24}{tuned_pre:18.0f}{tuned_dec:18.1f}")
        print(f"{'lumen (heuristic)':24}{plain_pre:18.0f}{plain_dec:18.1f}")
        print(f"{'PyTorch eager':24}{torch_pre:18.0f}{torch_dec:18.1f}")
        print()
        print(f"search speed-up over the heuristic schedules: prefill x{tuned_pre / plain_pre:.2f}, decode x{tuned_dec / plain_dec:.2f}")
        print(f"lumen over PyTorch: prefill x{tuned_pre / torch_pre:.2f}, decode x{tuned_dec / torch_dec:.2f}")
        print(f"correctness: prompt logits max |lumen - torch| = {err:.2e}; "
              f"{'the same' if same else 'DIFFERENT'} {args.tokens} greedy tokens in all three runs")
        print(f"generated: {tuned_tokens[:16]} ...")
        if not same or err > 1e-3:
            sys.exit("demo: lumen and PyTorch disagree")


if __name__ == "__main__":
    main()
