"""nn modules against PyTorch / Hugging Face modules, weights set by name."""
import numpy as np
import pytest
import torch

import lumen
from harness import compare, data, expect_error, record


def run_module(make, torch_module, inputs, backend, names_must_match=True):
    """Builds the lumen module, loads torch_module's weights by name, returns (lumen outputs, params)."""
    g = lumen.Graph()
    tensors = [g.input(f"x{i}", a.shape, lumen.int32 if a.dtype.kind in "iu" else lumen.float32) for i, a in enumerate(inputs)]
    module = make(g)
    out = module(*tensors)
    outs = list(out) if isinstance(out, tuple) else [out]
    program = lumen.compile(g, outs, backend=backend)
    params = module.parameters()
    state = {k: v for k, v in torch_module.state_dict().items() if k in params or names_must_match}
    state = {k: v for k, v in state.items() if not k.endswith("num_batches_tracked")}
    if names_must_match:
        assert set(params) == set(state), (sorted(params), sorted(state))
    for name in params:
        program.set(name, state[name].detach().numpy())
    for i, a in enumerate(inputs):
        program.set(f"x{i}", a)
    program.run()
    return [program.get(o) for o in outs]


def _torch(module):
    torch.manual_seed(0)
    for p in module.parameters():
        torch.nn.init.normal_(p, std=0.5)
    return module.eval()


def check_module(op, make, torch_module, inputs, backend, torch_call=None, atol=1e-5, rtol=1e-5):
    got = run_module(make, torch_module, inputs, backend)
    with torch.no_grad():
        want = (torch_call or torch_module)(*[torch.from_numpy(a) for a in inputs])
    compare(op, got[0], want, lumen.float32, rtol, atol)
    record(op, ", ".join("x".join(map(str, a.shape)) for a in inputs))


def test_linear_embedding(backend):
    check_module("nn.Linear", lambda g: lumen.nn.Linear(g, "", 7, 5), _torch(torch.nn.Linear(7, 5)), [data((3, 7))], backend)
    check_module("nn.Linear", lambda g: lumen.nn.Linear(g, "", 7, 5, bias=False), _torch(torch.nn.Linear(7, 5, bias=False)),
                 [data((2, 3, 7))], backend)
    ids = np.array([[0, 9, 3]], dtype=np.int32)
    emb = _torch(torch.nn.Embedding(10, 4))
    check_module("nn.Embedding", lambda g: lumen.nn.Embedding(g, "", 10, 4), emb, [ids], backend,
                 torch_call=lambda i: emb(i.long()))


def test_norms(backend):
    check_module("nn.LayerNorm", lambda g: lumen.nn.LayerNorm(g, "", 33), _torch(torch.nn.LayerNorm(33)), [data((2, 5, 33))], backend)
    check_module("nn.RMSNorm", lambda g: lumen.nn.RMSNorm(g, "", 33, 1e-6), _torch(torch.nn.RMSNorm(33, eps=1e-6)), [data((4, 33))], backend)
    check_module("nn.GroupNorm", lambda g: lumen.nn.GroupNorm(g, "", 2, 6), _torch(torch.nn.GroupNorm(2, 6)), [data((2, 6, 3, 3))], backend)
    bn = _torch(torch.nn.BatchNorm2d(6))
    bn.running_mean.normal_()
    bn.running_var.uniform_(0.5, 2)
    check_module("nn.BatchNorm2d", lambda g: lumen.nn.BatchNorm2d(g, "", 6), bn, [data((2, 6, 3, 3))], backend)


def test_convs(backend):
    check_module("nn.Conv1d", lambda g: lumen.nn.Conv1d(g, "", 4, 6, 3, stride=2, padding=1),
                 _torch(torch.nn.Conv1d(4, 6, 3, stride=2, padding=1)), [data((2, 4, 17))], backend, atol=1e-4)
    check_module("nn.Conv2d", lambda g: lumen.nn.Conv2d(g, "", 4, 6, (3, 3), padding=(1, 1), groups=2),
                 _torch(torch.nn.Conv2d(4, 6, 3, padding=1, groups=2)), [data((1, 4, 7, 6))], backend, atol=1e-4)


def test_mlp_swiglu_sequential(backend):
    class TorchMLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 8)

        def forward(self, x):
            return self.fc2(torch.nn.functional.gelu(self.fc1(x)))

    check_module("nn.MLP", lambda g: lumen.nn.MLP(g, "", 8, 16), _torch(TorchMLP()), [data((3, 8))], backend, atol=1e-4)
    from transformers.models.llama.modeling_llama import LlamaConfig, LlamaMLP
    cfg = LlamaConfig(hidden_size=8, intermediate_size=24, hidden_act="silu", num_attention_heads=2, num_key_value_heads=2)
    check_module("nn.SwiGLU", lambda g: lumen.nn.SwiGLU(g, "", 8, 24), _torch(LlamaMLP(cfg)), [data((2, 3, 8))], backend, atol=1e-4)

    torch_seq = _torch(torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2)))
    check_module("nn.Sequential",
                 lambda g: lumen.nn.Sequential(lumen.nn.Linear(g, "0", 6, 5), lumen.relu, lumen.nn.Linear(g, "2", 5, 2)),
                 torch_seq, [data((4, 6))], backend)


def _llama(hidden=32, heads=4, kv_heads=2, inter=64, layers=1):
    from transformers.models.llama.modeling_llama import LlamaConfig
    return LlamaConfig(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads,
                       intermediate_size=inter, num_hidden_layers=layers, rms_norm_eps=1e-6, rope_theta=10000.0,
                       max_position_embeddings=256, attn_implementation="eager")


@pytest.mark.parametrize("kv_heads", [4, 2])
def test_attention_matches_hugging_face_llama(backend, kv_heads):
    from transformers.models.llama.modeling_llama import LlamaAttention, LlamaRotaryEmbedding
    cfg = _llama(kv_heads=kv_heads)
    attn = _torch(LlamaAttention(cfg, layer_idx=0))
    rope = LlamaRotaryEmbedding(cfg)
    x = data((2, 9, 32), low=-1, high=1)

    def torch_call(t):
        pos = torch.arange(t.shape[1])[None]
        mask = torch.full((t.shape[1], t.shape[1]), float("-inf")).triu(1)[None, None]
        return attn(t, position_embeddings=rope(t, pos), attention_mask=mask)[0]

    check_module("nn.MultiHeadAttention",
                 lambda g: lumen.nn.MultiHeadAttention(g, "", 32, 4, kv_heads=kv_heads, rope_theta=10000.0),
                 attn, [x], backend, torch_call=torch_call, atol=2e-5)


def test_transformer_block_matches_hugging_face_llama_layer(backend):
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding
    cfg = _llama()
    layer = _torch(LlamaDecoderLayer(cfg, layer_idx=0))
    rope = LlamaRotaryEmbedding(cfg)
    x = data((1, 7, 32), low=-1, high=1)

    def torch_call(t):
        pos = torch.arange(t.shape[1])[None]
        mask = torch.full((t.shape[1], t.shape[1]), float("-inf")).triu(1)[None, None]
        out = layer(t, attention_mask=mask, position_embeddings=rope(t, pos))
        return out[0] if isinstance(out, tuple) else out

    check_module("nn.TransformerBlock",
                 lambda g: lumen.nn.TransformerBlock(g, "", 32, 4, 64, kv_heads=2, rope_theta=10000.0),
                 layer, [x], backend, torch_call=torch_call, atol=5e-5)


def test_attention_with_kv_cache_equals_full_sequence(backend):
    """Attending with past keys/values equals attending over the whole sequence at once."""
    from transformers.models.llama.modeling_llama import LlamaAttention
    cfg = _llama(kv_heads=2)
    attn = _torch(LlamaAttention(cfg, layer_idx=0))
    state = {k: v.numpy() for k, v in attn.state_dict().items()}
    x = data((1, 8, 32), low=-1, high=1)

    g = lumen.Graph()
    full_in = g.input("full", (1, 8, 32))
    m = lumen.nn.MultiHeadAttention(g, "", 32, 4, kv_heads=2, rope_theta=10000.0)
    full_out, _, _ = m(full_in)
    head_in = g.input("head", (1, 5, 32))
    tail_in = g.input("tail", (1, 3, 32))
    _, k, v = m(head_in)
    tail_out, _, _ = m(tail_in, k, v)
    p = lumen.compile(g, [full_out, tail_out], backend=backend)
    for name, value in state.items():
        p.set(name, value)
    p.set("full", x)
    p.set("head", np.ascontiguousarray(x[:, :5]))
    p.set("tail", np.ascontiguousarray(x[:, 5:]))
    p.run()
    np.testing.assert_allclose(p.get(tail_out), p.get(full_out)[:, 5:], rtol=1e-5, atol=1e-5)


def test_module_parameter_names_and_errors():
    g = lumen.Graph()
    block = lumen.nn.TransformerBlock(g, "layers.3", 32, 4, 64, kv_heads=2, rope_theta=1e4)
    names = set(block.parameters())
    assert "layers.3.self_attn.q_proj.weight" in names and "layers.3.mlp.down_proj.weight" in names
    assert "layers.3.input_layernorm.weight" in names and len(names) == 9
    expect_error(lambda: lumen.nn.MultiHeadAttention(g, "a", 30, 4), "divisible")
    expect_error(lambda: lumen.nn.MultiHeadAttention(g, "b", 32, 4, kv_heads=3), "cannot share")
    expect_error(lambda: lumen.nn.MLP(g, "m", 4, 8, activation="swish"), "unknown")
    expect_error(lambda: lumen.nn.Linear(g, "layers.3.self_attn.q_proj", 32, 32), "already exists")
