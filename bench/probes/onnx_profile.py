"""Where an ONNX bench model's run goes, kernel by kernel (LUMEN_PROFILE=1, heuristic schedules).

  python3 bench/probes/onnx_profile.py [onnx_resnet18|onnx_mobilenet_v3_small|...]   (files from `make bench`)
"""
import os, sys, time
os.environ["LUMEN_PROFILE"] = "1"
sys.path.insert(0, "python")
import numpy as np, lumen
lumen.set_threads(2)
name = sys.argv[1] if len(sys.argv) > 1 else "onnx_resnet18"
p = lumen.onnx.load(f"build/bench_models/{name}.onnx").compile(backend="cpu", budget=0, tuning_cache=False)
x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
for _ in range(3): p(x=x)
t = time.perf_counter()
for _ in range(20): p(x=x)
print("ms/run", (time.perf_counter() - t) / 20 * 1e3)
r = p.report()
print(r[r.index("profile:"):])
