"""Where the cuda backend's time goes (LUMEN_PROFILE=1: every launch timed to
its end): the bench's 110M Llama decode and the sgemm / softmax / attention rows of
bench/gpu_rows.py. Run on a GPU machine by scripts/device/gpu_check's
`profile` step."""
import os
import sys

os.environ["LUMEN_PROFILE"] = "1"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import numpy as np  # noqa: E402

import lumen  # noqa: E402
from models import DECODE_FROM, llama_files, prompt_tokens  # noqa: E402

r = lumen.models.Llama(llama_files()["dir"], capacity=DECODE_FROM + 32, backend="cuda")
r.forward(prompt_tokens(DECODE_FROM, 32000))
for i in range(32):
    r.forward([(i * 13 + 5) % 32000])
report = r.report()
print(report[report.index("profile:"):report.index("prefill program:")] if "profile:" in report else report[-3000:])
rng = np.random.default_rng(0)
def causal_attention(g, x):
    return lumen.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True)


for name, shape, build in (("sgemm 4096", (4096, 4096), lambda g, x: lumen.matmul(x, x)),
                           ("softmax 4096", (4096, 4096), lambda g, x: lumen.softmax(x, -1)),
                           ("causal attention S4096", (1, 8, 4096, 64), causal_attention)):
    g = lumen.Graph()
    x = g.input("x", list(shape))
    p = g.compile([build(g, x)], backend="cuda")
    p.set("x", rng.standard_normal(shape, dtype=np.float32))
    for _ in range(5):
        p.run()
    rep = p.report()
    print(name, rep[rep.index("profile:"):] if "profile:" in rep else rep[-1500:])
    src = p.source if hasattr(p, "source") else ""
    print(src[:3000])
