"""torch.compile(backend="lumen") and lumen.compile(module, example_inputs):
outputs match eager PyTorch; unsupported ops fall back to PyTorch; dynamic
dims compile once. Small configs and random weights (built here, nothing
downloaded); search budget 0 so the file stays fast."""
import math
import os
import subprocess
import sys

import pytest
import torch

import lumen
from lumen import torch_backend as tb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HAS_INT64 = hasattr(lumen.DType, "int64")


@pytest.fixture(autouse=True)
def _fresh():
    torch._dynamo.reset()
    tb.reports.clear()
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()


def _compile(module, backend, **kwargs):
    return torch.compile(module, backend="lumen", options={"backend": backend, "budget_s": 0}, **kwargs)


def _close(out, ref, tol=1e-4):
    torch.testing.assert_close(out, ref, rtol=tol, atol=tol)


def _all_on_lumen(report):
    assert report.lumen_partitions >= 1
    assert not report.failed_partitions, report.failed_partitions
    assert not report.torch_ops, f"ran in PyTorch: {dict(report.torch_ops)}, refused: {report.refused}"


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(33, 64)
        self.fc2 = torch.nn.Linear(64, 7)

    def forward(self, x):
        return torch.softmax(self.fc2(torch.nn.functional.gelu(self.fc1(x))), dim=-1)


def test_entry_point_needs_no_import():
    """A fresh interpreter finds backend="lumen" through the entry point, without `import lumen`."""
    code = ("import sys, torch\n"
            "m = torch.nn.Linear(5, 3)\n"
            "x = torch.randn(2, 5)\n"
            "with torch.no_grad():\n"
            "    out = torch.compile(m, backend='lumen', options={'backend': 'interp', 'budget_s': 0})(x)\n"
            "    assert torch.allclose(out, m(x), atol=1e-5)\n"
            "import lumen.torch_backend as tb\n"
            "print(tb.reports[-1].lumen_partitions)\n")
    env = dict(os.environ, PYTHONPATH=os.environ.get("LUMEN_PYTHON_DIR") or os.path.join(ROOT, "python"))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "1"


def test_mlp(backend):
    m = MLP().eval()
    x = torch.randn(5, 33)
    with torch.no_grad():
        out = _compile(m, backend)(x)
        _close(out, m(x))
    _all_on_lumen(tb.reports[-1])
    assert tb.reports[-1].lumen_ops["aten.addmm.default"] == 2


def test_mlp_with_search():
    """A search budget goes through to lumen's compile (cpu: the schedule search runs)."""
    m = MLP().eval()
    x = torch.randn(5, 33)
    with torch.no_grad():
        out = torch.compile(m, backend="lumen", options={"backend": "cpu", "budget_s": 0.5})(x)
        _close(out, m(x))
    _all_on_lumen(tb.reports[-1])


class _Recording:
    """Stands in for a Program: records which inputs each execute() hands over (None: kept from the last call)."""

    def __init__(self, program):
        self.program, self.calls = program, []

    def execute(self, inputs, dims=None):
        self.calls.append([v is not None for v in inputs])
        return self.program.execute(inputs, dims or {})


def test_weights_changed_in_place_are_seen(backend):
    """Weights are lumen parameters, handed over again only when they change: an in-place update must show."""
    m = MLP().eval()
    x = torch.randn(3, 33)
    f = _compile(m, backend)
    with torch.no_grad():
        first = f(x)
        _close(first, m(x))
        (sub,) = [s for s in tb.reports[-1].graph_module.children() if isinstance(s, tb.LumenSubgraph)]
        assert sorted(sub._kinds) == ["param"] * 4 + ["tensor"]
        sub.program = _Recording(sub.program)
        _close(f(x), first)
        m.fc2.weight.mul_(-2.0)
        second = f(x)
        _close(second, m(x))
    assert not torch.allclose(first, second)
    assert sub.program.calls[0].count(True) == 1  # only x: the weights were unchanged
    assert sub.program.calls[1].count(True) == 2  # x and fc2.weight (its version changed)


def test_grad_enabled_forward_on_lumen_backward_in_torch(backend):
    m = MLP()
    x = torch.randn(4, 33)
    out = _compile(m, backend)(x)
    out[:, 0].sum().backward()
    got = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    ref = m(x)
    ref[:, 0].sum().backward()
    _close(out.detach(), ref.detach())
    for g, p in zip(got, m.parameters()):
        _close(g, p.grad)
    assert tb.reports[0].lumen_partitions >= 1


def test_resnet18(backend):
    """resnet18 at 32x32 (224x224 takes minutes to compile on a 2-core machine: `make bench` runs that)."""
    torchvision = pytest.importorskip("torchvision")
    m = torchvision.models.resnet18(num_classes=10).eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        _close(_compile(m, backend)(x), m(x), 1e-3)
    _all_on_lumen(tb.reports[-1])
    assert tb.reports[-1].lumen_ops["aten.convolution.default"] == 20


def test_mobilenet_v3_small(backend):
    torchvision = pytest.importorskip("torchvision")
    m = torchvision.models.mobilenet_v3_small(num_classes=10).eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        _close(_compile(m, backend)(x), m(x), 1e-3)
    _all_on_lumen(tb.reports[-1])


def _gpt2(layers=1):
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    config = transformers.GPT2Config(n_layer=layers, n_embd=64, n_head=4, vocab_size=101, n_positions=64,
                                     bos_token_id=0, eos_token_id=0)
    return transformers.GPT2Model(config).eval()


def test_gpt2_block_dynamic_sequence_compiles_once(backend):
    m = _gpt2()
    f = _compile(m, backend, dynamic=True)
    with torch.no_grad():
        for length in (5, 9, 13):
            ids = torch.randint(0, 101, (2, length))
            _close(f(ids).last_hidden_state, m(ids).last_hidden_state)
    assert len(tb.reports) == 1  # one graph for every length: the sequence is a lumen dynamic dim
    report = tb.reports[0]
    assert report.lumen_partitions >= 1 and not report.failed_partitions
    assert report.lumen_ops["aten.addmm.default"] == 4 and report.lumen_ops["aten.bmm.default"] == 2
    if not HAS_INT64:  # token and position ids are int64: their embedding lookup stays in PyTorch
        assert report.torch_ops["aten.embedding.default"] == 2


def test_graph_break(backend):
    class Breaks(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(16, 16)
            self.b = torch.nn.Linear(16, 4)

        def forward(self, x):
            h = torch.relu(self.a(x))
            scale = h.mean().item()  # a graph break: dynamo runs this in Python
            print(f"scale {scale:.3f}")
            return self.b(h * scale)

    m = Breaks().eval()
    x = torch.randn(3, 16)
    with torch.no_grad():
        _close(_compile(m, backend)(x), m(x))
    assert len(tb.reports) >= 2
    assert all(r.lumen_partitions >= 1 for r in tb.reports)


class WithSort(torch.nn.Module):
    """torch.sort has no lumen lowering: the graph is cut around it."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 3)

    def forward(self, x):
        h = torch.tanh(self.a(x))
        h = torch.sort(h, dim=-1).values
        return self.b(h * 2.0)


def test_unsupported_op_falls_back_to_pytorch(backend):
    m = WithSort().eval()
    x = torch.randn(4, 8)
    with torch.no_grad():
        _close(_compile(m, backend)(x), m(x))
    report = tb.reports[-1]
    assert report.torch_ops["aten.sort.default"] == 1
    assert "no lowering for aten.sort.default" in report.refused["aten.sort.default"]
    assert report.lumen_partitions == 2  # before and after the sort
    assert not report.failed_partitions


def test_lumen_compile_module_without_dynamo(backend):
    m = WithSort().eval()
    x = torch.randn(4, 8)
    seq = torch.export.Dim("seq", min=2, max=64)
    f = lumen.compile(m, (x,), dynamic_shapes=({0: seq},), backend=backend, budget_s=0)
    with torch.no_grad():
        for rows in (4, 7, 19):
            y = torch.randn(rows, 8)
            _close(f(y), m(y))
    assert len(tb.reports) == 1
    assert tb.reports[0].lumen_partitions == 2 and tb.reports[0].torch_ops["aten.sort.default"] == 1


def test_lumen_compile_still_compiles_graphs(backend):
    g = lumen.Graph()
    x = g.input("x", (2, 3))
    program = lumen.compile(g, [x * 2], backend)
    assert program(x=torch.ones(2, 3).numpy()).tolist() == [[2.0] * 3] * 2


def test_lumen_compile_untraceable_module_is_a_clear_error():
    class DataDependent(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return x

    with pytest.raises(lumen.Error, match="torch.compile"):
        lumen.compile(DataDependent(), (torch.randn(3),), budget_s=0)


def test_whisper_encoder_decoder(backend):
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    config = transformers.WhisperConfig(
        vocab_size=64, num_mel_bins=8, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, d_model=32, encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=16,
        max_target_positions=32, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    m = transformers.WhisperForConditionalGeneration(config).eval()
    mel = torch.randn(2, 8, 32)  # log-mel features: (batch, mel bins, 2 * max_source_positions)
    ids = torch.randint(0, 64, (2, 6))
    with torch.no_grad():
        out = _compile(m, backend)(input_features=mel, decoder_input_ids=ids).logits
        _close(out, m(input_features=mel, decoder_input_ids=ids).logits)
    report = tb.reports[-1]
    assert not report.failed_partitions
    assert report.lumen_ops["aten.convolution.default"] == 2  # the encoder's conv stem
    assert report.lumen_ops["aten._softmax.default"] == 3     # encoder, decoder self- and cross-attention


class UNetBlock(torch.nn.Module):
    """A diffusion UNet's resnet + attention block: group norm, SiLU, 3x3 convs, a sinusoidal timestep
    embedding through an MLP, and self-attention over the pixels."""

    def __init__(self, channels=16, time_dim=32, groups=4, heads=2):
        super().__init__()
        self.time_dim, self.heads = time_dim, heads
        self.time_mlp = torch.nn.Sequential(torch.nn.Linear(time_dim, channels), torch.nn.SiLU(),
                                            torch.nn.Linear(channels, channels))
        self.norm1 = torch.nn.GroupNorm(groups, channels)
        self.conv1 = torch.nn.Conv2d(channels, channels, 3, padding=1)
        self.norm2 = torch.nn.GroupNorm(groups, channels)
        self.conv2 = torch.nn.Conv2d(channels, channels, 3, padding=1)
        self.attn_norm = torch.nn.GroupNorm(groups, channels)
        self.qkv = torch.nn.Conv2d(channels, 3 * channels, 1)
        self.proj = torch.nn.Conv2d(channels, channels, 1)

    def timestep_embedding(self, t):
        half = self.time_dim // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
        angles = t[:, None] * freqs[None, :]
        return torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)

    def forward(self, x, t):
        h = self.conv1(torch.nn.functional.silu(self.norm1(x)))
        h = h + self.time_mlp(self.timestep_embedding(t))[:, :, None, None]
        h = self.conv2(torch.nn.functional.silu(self.norm2(h)))
        x = x + h
        b, c, height, width = x.shape
        q, k, v = self.qkv(self.attn_norm(x)).chunk(3, dim=1)
        q, k, v = (z.reshape(b, self.heads, c // self.heads, height * width).transpose(-1, -2) for z in (q, k, v))
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        a = a.transpose(-1, -2).reshape(b, c, height, width)
        return x + self.proj(a)


def test_diffusion_unet_block(backend):
    m = UNetBlock().eval()
    x = torch.randn(2, 16, 8, 8)
    t = torch.tensor([3.0, 250.0])
    with torch.no_grad():
        _close(_compile(m, backend)(x, t), m(x, t))
    _all_on_lumen(tb.reports[-1])


def test_program_execute_dlpack(backend):
    """Program.execute: positional inputs (None keeps the last), dims by name, DLPack outputs (bf16 kept)."""
    g = lumen.Graph()
    x = g.input("x", ("n", 3), lumen.bfloat16)
    program = lumen.compile(g, [(x * 2).cast(lumen.bfloat16), x.cast(lumen.float32) + 1], backend)
    data = torch.arange(6, dtype=torch.bfloat16).reshape(2, 3)
    doubled, plus_one = (torch.from_dlpack(o) for o in program.execute([data], {"n": 2}))
    assert doubled.dtype == torch.bfloat16 and torch.equal(doubled, data * 2)
    assert plus_one.dtype == torch.float32 and torch.equal(plus_one, data.float() + 1)
    again = torch.from_dlpack(program.execute([None])[1])
    assert torch.equal(again, plus_one)
    assert again.data_ptr() != plus_one.data_ptr()  # a result still held is never overwritten by the next run
    with pytest.raises(lumen.Error, match="takes 1 inputs, 2 were given"):
        program.execute([data, data])


def test_masks_and_reductions_stay_whole(backend):
    """triu / roll are lowered whole (their decompositions would be int64 index arithmetic left to PyTorch)."""
    class Ops(torch.nn.Module):
        def forward(self, x):
            s = x @ x.transpose(-1, -2)
            s = torch.triu(s, 1) + torch.tril(torch.roll(s, 1, -1), -1)
            return (s.sum(-1) + torch.nn.functional.hardswish(x).amax(-1) + torch.logsumexp(x, -1)
                    + x.std(-1) + x.var(-1, correction=0) + torch.clamp(x, -0.5, 0.5).prod(-1))

    m = Ops()
    x = torch.randn(3, 5, 7)
    with torch.no_grad():
        _close(_compile(m, backend)(x), m(x))
    _all_on_lumen(tb.reports[-1])


class ManyOps(torch.nn.Module):
    """One graph exercising how each lowering maps ATen arguments onto lumen ops (odd sizes, negative
    dims, scalar operands, alpha / beta, strides, groups, dilation)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2)
        self.deconv = torch.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
        self.conv1d = torch.nn.Conv1d(4, 5, 3, stride=2, padding=1)
        self.norm = torch.nn.GroupNorm(2, 4)

    def forward(self, x, m, b):  # x (2, 4, 7, 9), m (5, 7), b (3, 5, 7)
        F = torch.nn.functional
        r = x.reshape(8, 63)
        return (
            self.conv(x), self.deconv(x), self.conv1d(x.flatten(2)), self.norm(x),
            F.avg_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 2, ceil_mode=True, count_include_pad=False),
            F.max_pool2d(x, 3, 2, 1), F.adaptive_avg_pool2d(x, 1),
            torch.cumsum(r, 1), torch.cumprod(r[:, :5], -1), torch.flip(r, [0]), torch.roll(r, 3, 1), r.repeat(2, 1),
            F.pad(r, (1, 2), value=0.5), torch.stack([m, m * 2], 1), torch.unbind(b, 1)[2],
            F.leaky_relu(r, 0.2), F.softplus(r, 2.0), F.elu(r), torch.log1p(r.abs()), F.gelu(r, approximate="tanh"),
            torch.erf(r), torch.sign(r), F.hardtanh(r, -0.5, 0.25), F.silu(r), F.mish(r), F.hardswish(r),
            torch.where(r > 0, r, 0.5), torch.clamp(r, min=-0.1), torch.clamp(r, max=r[0]),
            torch.remainder(r, 0.7), torch.fmod(r, 0.7), r // 0.3, r.div(0.3, rounding_mode="trunc"),
            (2.0 - r) / (r.abs() + 1), r.pow(3), torch.pow(2.0, r), (r.abs() + 0.1).rsqrt(),
            r.var(1), r.std(0, correction=0), r[:, :6].prod(1), torch.logsumexp(r, 0), r.amax((0, 1)),
            r.max(-1).values, r.min(0).values, r.mean(), r.sum(0, keepdim=True),
            torch.addmm(b[0, :, :5], m, b[1].t(), beta=0.5, alpha=2.0),
            torch.baddbmm(b[:, :, :5], b, b.transpose(1, 2), alpha=0.5),
            m @ b[0].t(), torch.bmm(b, b.transpose(1, 2)),
            x[..., 1:8:2], x[:, -1], x.narrow(3, 2, 4), m[None].expand(3, 5, 7), m.unsqueeze(1).squeeze(1),
            F.softmax(m, 0), F.log_softmax(m, -1), torch.tril(m, 1), torch.triu(m, -1),
            (m > 0) & (m < 0.5), (m > 0) | (m < -0.5), ~(m > 0), torch.isnan(m), m.to(torch.float16).float(),
            m.to(torch.bfloat16), m.to(torch.int32), torch.full_like(m, 3.0), torch.ones(2, 3) * m.sum(),
        )


def test_lowerings_match_eager(backend):
    m = ManyOps().eval()
    args = (torch.randn(2, 4, 7, 9), torch.randn(5, 7), torch.randn(3, 5, 7))
    with torch.no_grad():
        outs = _compile(m, backend)(*args)
        refs = m(*args)
    assert len(outs) == len(refs)
    for i, (o, r) in enumerate(zip(outs, refs)):
        assert o.dtype == r.dtype, i
        tol = 2e-2 if r.dtype == torch.bfloat16 else 1e-4
        torch.testing.assert_close(o, r, rtol=tol, atol=tol, msg=lambda s: f"output {i}: {s}")
    report = tb.reports[-1]
    assert not report.failed_partitions, report.failed_partitions
    assert not report.torch_ops, f"ran in PyTorch: {dict(report.torch_ops)}, refused: {report.refused}"


def test_tensors_off_the_cpu_stay_in_pytorch(backend):
    """Nothing is taken from a graph on another device, not even ops without inputs (a `full` feeding it)."""
    class OnDevice(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) + torch.ones(3, device=x.device)

    x = torch.randn(2, 3, device="meta")  # a device lumen does not run on, present on every machine
    out = _compile(OnDevice(), backend)(x)
    assert out.device.type == "meta" and out.shape == (2, 3)
    report = tb.reports[-1]
    assert report.lumen_partitions == 0
    assert report.torch_ops["aten.full.default"] == 1
    assert "aten.full.default on device meta" in report.refused["aten.full.default"]


def test_dynamic_batch_convnet_compiles_once(backend):
    """A dynamic batch (mark_dynamic) is a lumen dynamic dim through convs, norms and pooling."""
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                            torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 4, 3, stride=2), torch.nn.AdaptiveAvgPool2d(1),
                            torch.nn.Flatten(), torch.nn.Linear(4, 5)).eval()
    f = _compile(m, backend)
    with torch.no_grad():
        for batch in (2, 3, 7):
            x = torch.randn(batch, 3, 12, 12)
            torch._dynamo.mark_dynamic(x, 0)
            _close(f(x), m(x))
    assert len(tb.reports) == 1
    _all_on_lumen(tb.reports[0])


def test_dynamic_dim_found_inside_a_size_expression(backend):
    """After the fallback the second partition only sees 2*s0 rows: s0 is solved from that size."""
    class Reshaped(torch.nn.Module):
        def forward(self, x):
            h = torch.relu(x).reshape(-1, 4)          # (s0, 8) -> (2*s0, 4)
            h = torch.sort(h, dim=-1).values          # PyTorch
            return torch.tanh(h) * 2 + h.sum()        # lumen, input (2*s0, 4)

    m = Reshaped()
    f = _compile(m, backend)
    with torch.no_grad():
        for rows in (3, 5, 8):
            x = torch.randn(rows, 8)
            torch._dynamo.mark_dynamic(x, 0)
            _close(f(x), m(x))
    assert len(tb.reports) == 1
    report = tb.reports[0]
    assert report.lumen_partitions == 2 and not report.failed_partitions, report.failed_partitions


def test_failed_call_hands_weights_again(backend):
    """A call that fails inside lumen must not leave the weights marked as already handed over."""
    m = MLP().eval()
    x = torch.randn(3, 33)
    f = _compile(m, backend)
    with torch.no_grad():
        f(x)
        (sub,) = [s for s in tb.reports[-1].graph_module.children() if isinstance(s, tb.LumenSubgraph)]
        sub._last = [None] * len(sub._last)  # as after a first call that failed
        real = sub.program

        class Failing:
            def execute(self, inputs, dims=None):
                raise lumen.Error("simulated failure")
        sub.program = Failing()
        with pytest.raises(lumen.Error, match="simulated"):
            f(x)
        sub.program = _Recording(real)
        _close(f(x), m(x))
    assert sub.program.calls[0].count(True) == 5  # x and the four weights: none was taken as kept
