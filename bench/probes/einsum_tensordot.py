"""einsum as a tensordot ([512, 64, 64] x [64, 64, 512] -> [512, 512]), lumen heuristic schedules, 2 threads, min of 10.

  python3 bench/probes/einsum_tensordot.py
"""
import sys, time; sys.path.insert(0, __import__('os').path.join(__import__('os').path.dirname(__file__), '..', '..', 'python'))
import lumen, numpy as np, torch
lumen.set_threads(2); torch.set_num_threads(2)
rng=np.random.default_rng(0); a=rng.standard_normal((512,64,64)).astype(np.float32); b=rng.standard_normal((64,64,512)).astype(np.float32)
g=lumen.Graph(); x=g.input("a",a.shape); y=g.input("b",b.shape)
p=lumen.compile(g,[lumen.einsum("ikl,lkj->ij",x,y)],budget_s=0,tuning_cache=False); p.set("a",a); p.set("b",b); p.run()
ts=[]
for _ in range(10):
    t=time.perf_counter(); p.run(); ts.append(time.perf_counter()-t)
ref=torch.tensordot(torch.from_numpy(a),torch.from_numpy(b),dims=([1,2],[1,0])).numpy()
print("einsum ms %.2f err %.1e" % (1e3*min(ts), np.abs(p.get(p.output_names[0])-ref).max()/np.abs(ref).max()))
