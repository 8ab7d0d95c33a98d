"""The benchmark workloads: inputs, and the same computation written for
lumen, PyTorch (also run through torch.compile and exported to ONNX), NumPy,
JAX and tinygrad where they express it. Names are the ones results use."""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Optional

import numpy as np


@dataclasses.dataclass
class Workload:
    name: str
    shapes: list                  # input shapes (float32)
    lumen: Callable               # (graph, *tensors) -> tensor
    torch: Callable               # (*torch tensors) -> tensor
    flops: float = 0.0            # for compute-bound rows: % of FMA peak
    bytes: float = 0.0            # minimal DRAM traffic for memory-bound rows: % of STREAM
    numpy: Optional[Callable] = None
    jax: Optional[Callable] = None
    tinygrad: Optional[Callable] = None
    native: Optional[tuple] = None  # (M, N, K) for the oneDNN/OpenBLAS helper
    rotate: int = 1               # copies of the last input, cycled so it stays out of cache
    module_params: tuple = ()     # the last inputs are parameters the lumen builder declares, by these names
    builtin: Optional[str] = None  # a tensor comprehension row: the built-in row on the same shapes

    def inputs(self, rng):
        arrays = []
        for i, s in enumerate(self.shapes):
            arrays.append(rng.standard_normal(s).astype(np.float32) * (0.1 if len(s) >= 2 else 1.0))
        return arrays


def _gelu_np(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def _sgemm(n):
    return Workload(
        f"sgemm_{n}", [(n, n), (n, n)], lambda g, a, b: a @ b, lambda a, b: a @ b, flops=2.0 * n ** 3,
        numpy=lambda a, b: a @ b, jax=lambda jnp: (lambda a, b: a @ b), tinygrad=lambda a, b: a @ b,
        native=(n, n, n))


def _gemv(n, k):
    import lumen.nn.functional as F
    return Workload(
        f"gemv_{k}x{n}", [(1, k), (n, k)], lambda g, x, w: F.linear(x, w),
        lambda x, w: __import__("torch").nn.functional.linear(x, w), bytes=4.0 * n * k,
        numpy=lambda x, w: x @ w.T, jax=lambda jnp: (lambda x, w: x @ w.T), native=(1, n, k),
        rotate=max(2, int(math.ceil(320e6 / (4.0 * n * k)))))


def _attention(causal, s=1024, plain=False):
    """Attention B1 H8 D64. `plain`: written as users write it with plain ops —
    matmul, scale, softmax, matmul, and a causal mask as where(col > row, -inf,
    scores) over arange — not through scaled_dot_product_attention."""
    import lumen
    import lumen.nn.functional as F

    def t(q, k, v):
        return __import__("torch").nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def plain_ops(g, q, k, v):
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(d))
        if causal:
            row = g.arange(s).unsqueeze(1)
            col = g.arange(s).unsqueeze(0)
            scores = lumen.where(col > row, g.full((1,), float("-inf")), scores)
        return lumen.softmax(scores, -1) @ v
    d, h = 64, 8
    flops = 4.0 * h * s * s * d * (0.5 if causal else 1.0)
    name = f"attention_s{s}" + ("_causal" if causal else "") + ("_plain" if plain else "")
    build = plain_ops if plain else (lambda g, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
    return Workload(name, [(1, h, s, d)] * 3, build, t, flops=flops)


def _mlp():
    import lumen.nn.functional as F

    def torch_mlp(x, w1, b1, w2, b2):
        tf = __import__("torch").nn.functional
        return tf.linear(tf.gelu(tf.linear(x, w1, b1), approximate="tanh"), w2, b2)
    def lumen_mlp(g, x):  # weights are parameters, as in any model
        w1, b1, w2, b2 = (g.parameter(n, s) for n, s in [("w1", (4096, 1024)), ("b1", (4096,)), ("w2", (1024, 4096)),
                                                           ("b2", (1024,))])
        return F.linear(F.gelu(F.linear(x, w1, b1), approximate="tanh"), w2, b2)
    return Workload(
        "mlp_b64", [(64, 1024), (4096, 1024), (4096,), (1024, 4096), (1024,)],
        lumen_mlp, torch_mlp, flops=2.0 * 64 * 1024 * 4096 * 2,
        numpy=lambda x, w1, b1, w2, b2: _gelu_np(x @ w1.T + b1) @ w2.T + b2, module_params=("w1", "b1", "w2", "b2"))


def _conv():
    import lumen.nn.functional as F
    # The weight is a parameter, as in any model (and as Winograd's kept filter transform needs);
    # % of the FMA peak counts the direct convolution's multiply-adds.
    return Workload(
        "conv3x3_56", [(1, 64, 56, 56), (64, 64, 3, 3)], lambda g, x: F.conv2d(x, g.parameter("w", (64, 64, 3, 3)), padding=1),
        lambda x, w: __import__("torch").nn.functional.conv2d(x, w, padding=1), flops=2.0 * 64 * 64 * 9 * 56 * 56,
        module_params=("w",))


def _gpt2_block():
    import lumen

    d, heads, hidden, seq = 768, 12, 3072, 512
    names = ["input_layernorm.weight", "input_layernorm.bias", "self_attn.q_proj.weight", "self_attn.q_proj.bias",
             "self_attn.k_proj.weight", "self_attn.k_proj.bias", "self_attn.v_proj.weight", "self_attn.v_proj.bias",
             "self_attn.o_proj.weight", "self_attn.o_proj.bias", "post_attention_layernorm.weight",
             "post_attention_layernorm.bias", "mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight", "mlp.fc2.bias"]
    shapes = [(d,), (d,), (d, d), (d,), (d, d), (d,), (d, d), (d,), (d, d), (d,), (d,), (d,), (hidden, d), (hidden,),
              (d, hidden), (d,)]

    def build(g, x):  # the block declares its parameters as inputs named like `names`
        block = lumen.nn.TransformerBlock(g, "", d, heads, hidden, norm="layer", norm_eps=1e-5, mlp="gelu_tanh",
                                          bias=True, causal=True)
        return block(x)[0]

    def torch_block(x, *p):
        import torch
        tf = torch.nn.functional
        P = dict(zip(names, p))
        h = tf.layer_norm(x, (d,), P["input_layernorm.weight"], P["input_layernorm.bias"], 1e-5)
        q = tf.linear(h, P["self_attn.q_proj.weight"], P["self_attn.q_proj.bias"])
        k = tf.linear(h, P["self_attn.k_proj.weight"], P["self_attn.k_proj.bias"])
        v = tf.linear(h, P["self_attn.v_proj.weight"], P["self_attn.v_proj.bias"])
        split = lambda t: t.view(1, seq, heads, d // heads).transpose(1, 2)
        a = tf.scaled_dot_product_attention(split(q), split(k), split(v), is_causal=True)
        x = x + tf.linear(a.transpose(1, 2).reshape(1, seq, d), P["self_attn.o_proj.weight"], P["self_attn.o_proj.bias"])
        h = tf.layer_norm(x, (d,), P["post_attention_layernorm.weight"], P["post_attention_layernorm.bias"], 1e-5)
        return x + tf.linear(tf.gelu(tf.linear(h, P["mlp.fc1.weight"], P["mlp.fc1.bias"]), approximate="tanh"),
                             P["mlp.fc2.weight"], P["mlp.fc2.bias"])
    flops = 2.0 * seq * (4 * d * d + 2 * d * hidden) + 2.0 * seq * seq * d
    return Workload("gpt2_block_s512", [(1, seq, d)] + shapes, build, torch_block, flops=flops,
                    module_params=tuple(names))


def all_workloads():
    import lumen
    import lumen.nn.functional as F
    n16 = 16 * 1024 * 1024
    rows = [_sgemm(256), _sgemm(512), _sgemm(1024), _sgemm(2048), _gemv(4096, 4096), _gemv(11008, 4096),
            Workload("gelu_chain_16m", [(n16,), (n16,), (n16,)], lambda g, x, w, b: F.gelu(x * w + b, approximate="tanh"),
                     lambda x, w, b: __import__("torch").nn.functional.gelu(x * w + b, approximate="tanh"),
                     bytes=4.0 * 4 * n16, numpy=lambda x, w, b: _gelu_np(x * w + b),
                     jax=lambda jnp: (lambda x, w, b: __import__("jax").nn.gelu(x * w + b, approximate=True)),
                     tinygrad=lambda x, w, b: (x * w + b).gelu()),
            Workload("softmax_4096", [(4096, 4096)], lambda g, x: lumen.softmax(x, -1),
                     lambda x: __import__("torch").softmax(x, -1), bytes=2 * 4.0 * 4096 * 4096,
                     jax=lambda jnp: (lambda x: __import__("jax").nn.softmax(x, -1)),
                     tinygrad=lambda x: x.softmax(-1)),
            Workload("layernorm_4096", [(4096, 4096)], lambda g, x: F.layer_norm(x, (4096,)),
                     lambda x: __import__("torch").nn.functional.layer_norm(x, (4096,)), bytes=2 * 4.0 * 4096 * 4096,
                     tinygrad=lambda x: x.layernorm()),
            Workload("rmsnorm_4096", [(4096, 4096)], lambda g, x: F.rms_norm(x, (4096,), eps=1e-6),
                     lambda x: __import__("torch").nn.functional.rms_norm(x, (4096,), eps=1e-6),
                     bytes=2 * 4.0 * 4096 * 4096),
            # Reductions with few outputs (rfactor cuts them into parallel parts), inputs cold.
            Workload("sum_all_4096", [(4096, 4096)], lambda g, x: lumen.sum(x), lambda x: x.sum(),
                     bytes=4.0 * 4096 * 4096, numpy=lambda x: x.sum(), jax=lambda jnp: (lambda x: x.sum()),
                     tinygrad=lambda x: x.sum(), rotate=5),
            Workload("sum_cols_4096", [(4096, 4096)], lambda g, x: lumen.sum(x, 0), lambda x: x.sum(0),
                     bytes=4.0 * 4096 * 4096, numpy=lambda x: x.sum(0), jax=lambda jnp: (lambda x: x.sum(0)),
                     tinygrad=lambda x: x.sum(0), rotate=5),
            _attention(False), _attention(True), _attention(False, 4096, plain=True),
            _attention(True, 4096, plain=True), _attention(False, 16384, plain=True), _mlp(), _conv(), _gpt2_block()]
    from bf16_gemm import bf16_workloads
    from models import model_workloads
    from tc_workloads import tc_workloads
    from torch_modules import torch_module_workloads
    from train_step import train_workloads
    rows += tc_workloads()
    return {**{w.name: w for w in rows}, **bf16_workloads(), **model_workloads(), **torch_module_workloads(), **train_workloads()}
