"""Gradients through the nn modules (lumen/nn) against torch.autograd: with
respect to the module's input and every trained parameter (weights set by
name from the torch module), for a loss weighting the output by fixed random
values. Recorded as gradient checks of the module (docs/ops.md)."""
import numpy as np
import pytest
import torch

import lumen
from grad_harness import GRAD_CURRENT
from harness import data


def _torch(module):
    torch.manual_seed(0)
    for p in module.parameters():
        torch.nn.init.normal_(p, std=0.5)
    return module.eval()


def check_module_grad(op, make, torch_module, inputs, backend, torch_call=None, skip=(), atol=1e-4):
    g = lumen.Graph()
    tensors = [g.input(f"x{i}", a.shape, lumen.int32 if a.dtype.kind in "iu" else lumen.float32) for i, a in enumerate(inputs)]
    module = make(g)
    out = module(*tensors)
    out = out[0] if isinstance(out, tuple) else out
    weights = np.random.default_rng(7).uniform(-1, 1, size=tuple(out.shape)).astype(np.float32)
    w = g.input("w", tuple(out.shape))
    loss = lumen.sum(out * w)
    params = {k: v for k, v in module.parameters().items() if k not in skip}
    float_inputs = [i for i, a in enumerate(inputs) if a.dtype.kind == "f"]
    grads = lumen.grad(loss, [tensors[i] for i in float_inputs] + list(params.values()))
    program = lumen.compile(g, [loss] + grads, backend=backend)
    state = {k: v for k, v in torch_module.state_dict().items()}
    for name in module.parameters():
        program.set(name, state[name].detach().numpy())
    for i, a in enumerate(inputs):
        program.set(f"x{i}", a)
    program.set("w", weights)
    program.run()
    GRAD_CURRENT.setdefault(op, set()).add(", ".join("x".join(map(str, a.shape)) for a in inputs))

    leaves = [torch.tensor(a, requires_grad=True) if a.dtype.kind == "f" else torch.from_numpy(a).long() for a in inputs]
    named = dict(torch_module.named_parameters())
    out_t = (torch_call or torch_module)(*leaves)
    (out_t * torch.from_numpy(weights)).sum().backward()
    want = [leaves[i].grad for i in float_inputs] + [named[k].grad for k in params]
    names = [f"x{i}" for i in float_inputs] + list(params)
    for name, mine, theirs in zip(names, grads, want):
        theirs = theirs.numpy()
        scale = max(1.0, float(np.abs(theirs).max()))
        np.testing.assert_allclose(program.get(mine), theirs, rtol=1e-4, atol=atol * scale, err_msg=f"{op}: {name}")


def test_linear_embedding_gradients(backend):
    check_module_grad("nn.Linear", lambda g: lumen.nn.Linear(g, "", 7, 5), _torch(torch.nn.Linear(7, 5)), [data((3, 7))], backend)
    emb = _torch(torch.nn.Embedding(10, 4))
    check_module_grad("nn.Embedding", lambda g: lumen.nn.Embedding(g, "", 10, 4), emb,
                      [np.array([[0, 9, 3, 9]], dtype=np.int32)], backend)


def test_norm_gradients(backend):
    check_module_grad("nn.LayerNorm", lambda g: lumen.nn.LayerNorm(g, "", 33), _torch(torch.nn.LayerNorm(33)),
                      [data((2, 5, 33))], backend)
    check_module_grad("nn.RMSNorm", lambda g: lumen.nn.RMSNorm(g, "", 33, 1e-6), _torch(torch.nn.RMSNorm(33, eps=1e-6)),
                      [data((4, 33))], backend)
    check_module_grad("nn.GroupNorm", lambda g: lumen.nn.GroupNorm(g, "", 2, 6), _torch(torch.nn.GroupNorm(2, 6)),
                      [data((2, 6, 3, 3))], backend)
    bn = _torch(torch.nn.BatchNorm2d(6))
    bn.running_var.uniform_(0.5, 2)
    check_module_grad("nn.BatchNorm2d", lambda g: lumen.nn.BatchNorm2d(g, "", 6), bn, [data((2, 6, 3, 3))], backend,
                      skip=("running_mean", "running_var"))


def test_conv_gradients(backend):
    check_module_grad("nn.Conv1d", lambda g: lumen.nn.Conv1d(g, "", 4, 6, 3, stride=2, padding=1),
                      _torch(torch.nn.Conv1d(4, 6, 3, stride=2, padding=1)), [data((2, 4, 17))], backend)
    check_module_grad("nn.Conv2d", lambda g: lumen.nn.Conv2d(g, "", 4, 6, (3, 3), padding=(1, 1), groups=2),
                      _torch(torch.nn.Conv2d(4, 6, 3, padding=1, groups=2)), [data((1, 4, 7, 6))], backend)


def test_mlp_swiglu_sequential_gradients(backend):
    class TorchMLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 8)

        def forward(self, x):
            return self.fc2(torch.nn.functional.gelu(self.fc1(x)))

    check_module_grad("nn.MLP", lambda g: lumen.nn.MLP(g, "", 8, 16), _torch(TorchMLP()), [data((3, 8))], backend)
    from transformers.models.llama.modeling_llama import LlamaConfig, LlamaMLP
    cfg = LlamaConfig(hidden_size=8, intermediate_size=24, hidden_act="silu", num_attention_heads=2, num_key_value_heads=2)
    check_module_grad("nn.SwiGLU", lambda g: lumen.nn.SwiGLU(g, "", 8, 24), _torch(LlamaMLP(cfg)), [data((2, 3, 8))], backend)
    torch_seq = _torch(torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2)))
    check_module_grad("nn.Sequential",
                      lambda g: lumen.nn.Sequential(lumen.nn.Linear(g, "0", 6, 5), lumen.relu, lumen.nn.Linear(g, "2", 5, 2)),
                      torch_seq, [data((4, 6))], backend)


def _llama():
    from transformers.models.llama.modeling_llama import LlamaConfig
    return LlamaConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64,
                       num_hidden_layers=1, rms_norm_eps=1e-6, rope_theta=10000.0, max_position_embeddings=256,
                       attn_implementation="eager")


@pytest.mark.parametrize("which", ["attention", "block"])
def test_attention_and_block_gradients(backend, which):
    from transformers.models.llama.modeling_llama import LlamaAttention, LlamaDecoderLayer, LlamaRotaryEmbedding
    cfg = _llama()
    rope = LlamaRotaryEmbedding(cfg)
    x = data((1, 7, 32), low=-1, high=1)
    if which == "attention":
        module = _torch(LlamaAttention(cfg, layer_idx=0))
        make = lambda g: lumen.nn.MultiHeadAttention(g, "", 32, 4, kv_heads=2, rope_theta=10000.0)  # noqa: E731
        op = "nn.MultiHeadAttention"
    else:
        module = _torch(LlamaDecoderLayer(cfg, layer_idx=0))
        make = lambda g: lumen.nn.TransformerBlock(g, "", 32, 4, 64, kv_heads=2, rope_theta=10000.0)  # noqa: E731
        op = "nn.TransformerBlock"

    def torch_call(t):
        pos = torch.arange(t.shape[1])[None]
        mask = torch.full((t.shape[1], t.shape[1]), float("-inf")).triu(1)[None, None]
        kwargs = {"position_embeddings": rope(t, pos), "attention_mask": mask}
        out = module(t, **kwargs)
        return out[0] if isinstance(out, tuple) else out

    check_module_grad(op, make, module, [x], backend, torch_call=torch_call, atol=2e-4)
