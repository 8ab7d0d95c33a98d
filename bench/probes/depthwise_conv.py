"""Depthwise conv probe: lumen (heuristic schedules) against PyTorch per shape, min of 30 runs.

  python3 bench/probes/depthwise_conv.py [THREADS]
"""
import sys, time; sys.path.insert(0, __import__('os').path.join(__import__('os').path.dirname(__file__), '..', '..', 'python'))
import lumen, numpy as np, torch
import lumen.nn.functional as F
T=int(sys.argv[1]) if len(sys.argv)>1 else 2; lumen.set_threads(T); torch.set_num_threads(T)
rng = np.random.default_rng(0)
cases = [((1,96,14,14),5,2),((1,240,14,14),5,1),((1,576,7,7),5,1),((1,144,28,28),3,2),((8,256,28,28),3,1),((1,72,28,28),5,2)]
for shape,k,s in cases:
    c = shape[1]
    xs = rng.standard_normal(shape).astype(np.float32); ws = rng.standard_normal((c,1,k,k)).astype(np.float32)
    g = lumen.Graph(); x = g.input("x", shape); w = g.input("w", ws.shape)
    p = lumen.compile(g, [F.conv2d(x, w, stride=s, padding=k//2, groups=c)], budget_s=0, tuning_cache=False)
    p.set("x", xs); p.set("w", ws); p.run()
    tx, tw = torch.from_numpy(xs), torch.from_numpy(ws)
    f = lambda: torch.nn.functional.conv2d(tx, tw, stride=s, padding=k//2, groups=c)
    ref = f().numpy(); got = p.get(p.output_names[0])
    tl, tt = [], []
    for r in range(30):
        t=time.perf_counter(); p.run(); tl.append(time.perf_counter()-t)
        t=time.perf_counter(); f(); tt.append(time.perf_counter()-t)
    print(shape, k, s, "lumen %.3f ms torch %.3f ms  ratio %.2f  kernels %d err %.1e" % (1e3*min(tl), 1e3*min(tt), min(tt)/min(tl), p.stats["kernels"], np.abs(got-ref).max()))
