#!/usr/bin/env python3
"""The llama.cpp peer of the model workloads, in a process of its own.

llama-cpp-python's llama.cpp is built with OpenMP, and ggml's barrier between
two operations is an OpenMP barrier. In a process of its own it keeps its own
OpenMP state (a short spin, then sleep: idle between calls), whatever the
worker's other libraries do with theirs, while the worker keeps interleaving.

Protocol, one line each way: `prefill N` or `decode FROM STEPS` -> the
milliseconds of the timed part; `logits PATH` -> the last logits saved as .npy.

  llamacpp_peer.py MODEL THREADS N_CTX VOCAB
"""
import os
import sys
import time

import numpy as np


def prompt_tokens(n, vocab):
    return [(i * 7919 + 1) % vocab for i in range(n)]


def main():
    model, threads, n_ctx, vocab = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    import llama_cpp
    llm = llama_cpp.Llama(model_path=model, n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=512, n_threads=threads,
                          n_threads_batch=threads, logits_all=False, verbose=False)
    print("ready", flush=True)
    for line in sys.stdin:
        cmd = line.split()
        try:
            if cmd[0] == "prefill":
                llm.reset()
                start = time.perf_counter()
                llm.eval(prompt_tokens(int(cmd[1]), vocab))
                ms = (time.perf_counter() - start) * 1e3
            elif cmd[0] == "decode":
                llm.reset()
                llm.eval(prompt_tokens(int(cmd[1]), vocab))
                start = time.perf_counter()
                for i in range(int(cmd[2])):
                    llm.eval([(i * 13 + 5) % vocab])
                ms = (time.perf_counter() - start) * 1e3
            elif cmd[0] == "logits":
                # With logits_all=False llama-cpp-python 0.3 leaves Llama.scores at zero: read the context's.
                np.save(cmd[1], np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy())
                ms = 0.0
            else:
                raise ValueError(f"unknown command {cmd[0]!r}")
            print(f"{ms:.6f}", flush=True)
        except Exception as e:  # reported to the worker, which marks the row failed
            print(f"error {type(e).__name__}: {e}".replace("\n", " "), flush=True)


if __name__ == "__main__":
    main()
