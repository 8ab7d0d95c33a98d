"""Smallest Python run of the cuda and cpu backends (the device check's first diagnostic)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python"))
import lumen  # noqa: E402

backend = sys.argv[1] if len(sys.argv) > 1 else "cuda"
g = lumen.Graph()
x = g.input("x", [4, 6])
print("input ok", flush=True)
y = x[1:3] * 2.0
print("slice ok", flush=True)
p = g.compile([y], backend=backend)
print("compile ok", flush=True)
print(p(x=np.arange(24, dtype=np.float32).reshape(4, 6)), flush=True)
