"""resnet-shaped 3x3 convolutions (weights as parameters, packed once): lumen against PyTorch per shape.

  python3 bench/probes/conv3x3_shapes.py [THREADS] [SEARCH_BUDGET_S] [CASES, e.g. 34]
"""
import sys, time; sys.path.insert(0, __import__('os').path.join(__import__('os').path.dirname(__file__), '..', '..', 'python'))
import lumen, numpy as np, torch
import lumen.nn.functional as F
T=int(sys.argv[1]) if len(sys.argv)>1 else 2; lumen.set_threads(T); torch.set_num_threads(T)
budget=float(sys.argv[2]) if len(sys.argv)>2 else 0
rng = np.random.default_rng(0)
cases_all = [((1,64,56,56),(64,64,3,3),1),((1,128,28,28),(128,128,3,3),1),((1,256,14,14),(256,256,3,3),1),((1,512,7,7),(512,512,3,3),1),((1,256,14,14),(512,256,3,3),2),((1,128,28,28),(256,128,3,3),2)]
cases = [c for i,c in enumerate(cases_all) if str(i) in (sys.argv[3] if len(sys.argv)>3 else "012345")]
for shape,wsh,s in cases:
    xs = rng.standard_normal(shape).astype(np.float32); ws = rng.standard_normal(wsh).astype(np.float32)
    g = lumen.Graph(); x = g.input("x", shape); w = g.parameter("w", wsh)
    p = lumen.compile(g, [F.conv2d(x, w, stride=s, padding=1)], budget_s=budget, tuning_cache=False)
    p.set("x", xs); p.set("w", ws); p.run()
    tx, tw = torch.from_numpy(xs), torch.from_numpy(ws)
    f = lambda: torch.nn.functional.conv2d(tx, tw, stride=s, padding=1)
    tl, tt = [], []
    for r in range(20):
        t=time.perf_counter(); p.run(); tl.append(time.perf_counter()-t)
        t=time.perf_counter(); f(); tt.append(time.perf_counter()-t)
    oh = (shape[2]+2-3)//s+1
    fl = 2*wsh[0]*wsh[1]*9*oh*oh
    print(shape, wsh, s, "lumen %.3f ms (%.0f GF/s) torch %.3f ms  ratio %.2f kernels %d" % (1e3*min(tl), fl/min(tl)/1e9, 1e3*min(tt), min(tt)/min(tl), p.stats["kernels"]))
