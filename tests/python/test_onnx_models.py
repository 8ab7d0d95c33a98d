"""Whole models exported with torch.onnx.export (random weights, built in the
test, written to a temporary folder) give the same outputs through lumen's
ONNX importer as through PyTorch and ONNX Runtime. The max abs errors are
printed (pytest -s) and bounded relative to the output's scale."""
import warnings

import numpy as np
import pytest
import torch

import lumen

ort = pytest.importorskip("onnxruntime")


def _export(module, args, path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, str(path), opset_version=17, dynamo=False, **kwargs)


def _compare(name, path, feed, reference, backend="cpu", tol=1e-4):
    ort_out = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    model = lumen.onnx.load(str(path))
    out = model.compile(backend=backend)(**feed)
    scale = float(np.abs(reference).max())  # relative: random-weight classifiers can have tiny logits
    err_torch = float(np.abs(out - reference).max())
    err_ort = float(np.abs(out - ort_out).max())
    print(f"\n{name} ({backend}): max abs error vs PyTorch {err_torch:.3g}, vs ONNX Runtime {err_ort:.3g} "
          f"(output scale {scale:.3g})")
    assert out.shape == reference.shape
    assert scale > 0
    assert err_torch <= tol * scale and err_ort <= tol * scale


@pytest.mark.parametrize("arch", ["resnet18", "mobilenet_v3_small"])
def test_torchvision_model(arch, tmp_path):
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = getattr(torchvision.models, arch)(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    path = tmp_path / f"{arch}.onnx"
    _export(model, (x,), path, input_names=["x"], output_names=["y"])
    with torch.no_grad():
        reference = model(x).numpy()
    _compare(arch, path, {"x": x.numpy()}, reference)


class GPT2Block(torch.nn.Module):
    """GPT-2's block: pre-norm causal self-attention (one fused qkv projection)
    and a tanh-GELU MLP, with residuals."""

    def __init__(self, dim=64, heads=4, context=32):
        super().__init__()
        self.heads = heads
        self.ln_1 = torch.nn.LayerNorm(dim)
        self.c_attn = torch.nn.Linear(dim, 3 * dim)
        self.c_proj = torch.nn.Linear(dim, dim)
        self.ln_2 = torch.nn.LayerNorm(dim)
        self.c_fc = torch.nn.Linear(dim, 4 * dim)
        self.mlp_proj = torch.nn.Linear(4 * dim, dim)
        self.register_buffer("bias", torch.tril(torch.ones(context, context, dtype=torch.bool)))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        split = lambda y: y.view(b, t, self.heads, d // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(q), split(k), split(v)
        scores = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        scores = scores.masked_fill(~self.bias[:t, :t], float("-inf"))
        y = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(torch.nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


def test_gpt2_block(backend, tmp_path):
    torch.manual_seed(0)
    block = GPT2Block().eval()
    x = torch.randn(2, 16, 64)
    path = tmp_path / "gpt2_block.onnx"
    _export(block, (x,), path, input_names=["x"], output_names=["y"])
    with torch.no_grad():
        reference = block(x).numpy()
    _compare("gpt2 block", path, {"x": x.numpy()}, reference, backend=backend)
