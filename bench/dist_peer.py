#!/usr/bin/env python3
"""The 2-rank side of the distributed model rows, run by mpirun as a peer
process of the bench worker (like bench/llamacpp_peer.py): every rank loads
the model under the plan with one thread; rank 0 reads commands from stdin and
broadcasts them, both ranks run them, rank 0 answers.

Protocol, one line each way: `prefill N` or `decode FROM STEPS` -> the
milliseconds of the timed part; `logits PATH` -> the last logits saved as .npy;
`quit`.

  mpirun -np 2 python3 bench/dist_peer.py MODEL PLAN CAPACITY VOCAB
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import lumen  # noqa: E402
import lumen.dist  # noqa: E402


def prompt_tokens(n, vocab):  # bench/models.py's
    return [(i * 7919 + 1) % vocab for i in range(n)]


def main():
    model, plan, capacity, vocab = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    lumen.set_threads(1)
    budget = float(os.environ.get("LUMEN_BENCH_BUDGET", "20"))
    r = lumen.dist.Llama(model, parallel=plan, capacity=capacity, budget_s=budget)
    rank = lumen.dist.rank()
    if rank == 0:
        print("ready", flush=True)
    last = None
    while True:
        line = lumen.dist.broadcast(sys.stdin.readline().strip() if rank == 0 else "")
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        try:
            ms = 0.0
            if cmd[0] == "prefill":
                r.reset()
                start = time.perf_counter()
                last = r.forward(prompt_tokens(int(cmd[1]), vocab))
                ms = (time.perf_counter() - start) * 1e3
            elif cmd[0] == "decode":
                r.reset()
                r.forward(prompt_tokens(int(cmd[1]), vocab))
                start = time.perf_counter()
                for i in range(int(cmd[2])):
                    last = r.forward([(i * 13 + 5) % vocab])
                ms = (time.perf_counter() - start) * 1e3
            elif cmd[0] == "logits":
                if rank == 0:
                    np.save(cmd[1], np.asarray(last))
            else:
                raise ValueError(f"unknown command {cmd[0]!r}")
            if rank == 0:
                print(f"{ms:.6f}", flush=True)
        except Exception as e:  # reported to the worker, which marks the row failed
            if rank == 0:
                print(f"error {type(e).__name__}: {e}".replace("\n", " "), flush=True)
            lumen.dist.abort(1)


if __name__ == "__main__":
    main()
