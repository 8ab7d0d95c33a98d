"""Whole models exported with torch.onnx.export (random weights, built in the
test, written to a temporary folder) give the same outputs through lumen's
ONNX importer as through PyTorch and ONNX Runtime. The max abs errors are
printed (pytest -s) and bounded relative to the output's scale.

Convnets (resnet18, mobilenet_v3_small), vision transformers (a small ViT on
every backend, vit_b_16 at 224x224 on cpu), a GPT-2 block, a Whisper
encoder-decoder (log-mel -> logits) and a diffusion-UNet block (convs, group
norm, attention over pixels, timestep embedding)."""
import warnings

import numpy as np
import pytest
import torch

import lumen

ort = pytest.importorskip("onnxruntime")


def _export(module, args, path, dynamo=False, **kwargs):
    """The TorchScript exporter (opset 17), or torch.export's (opset 18) for
    models the former cannot trace (transformers' attention masks)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            torch.onnx.export(module, args, str(path), opset_version=18, dynamo=True, verbose=False, **kwargs)
        else:
            torch.onnx.export(module, args, str(path), opset_version=17, dynamo=False, **kwargs)


def _compare(name, path, feed, reference, backend="cpu", tol=1e-4):
    ort_out = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    model = lumen.onnx.load(str(path))
    out = model.compile(backend=backend)(**feed)
    if isinstance(out, tuple):
        out = out[0]
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


def vision_transformer(size="small"):
    """torchvision's ViT with random weights; its classifier head starts at
    zero (torchvision's init), so it is drawn at random too: logits of 0 would
    hide every error. size "b_16": vit_b_16 at 224x224."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    if size == "b_16":
        model = torchvision.models.vit_b_16(weights=None)
    else:
        model = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                     hidden_dim=32, mlp_dim=64, num_classes=10)
    torch.nn.init.normal_(model.heads.head.weight, std=0.5)
    return model.eval()


def test_small_vit(backend, tmp_path):
    model = vision_transformer()
    x = torch.randn(2, 3, 32, 32)
    path = tmp_path / "vit_small.onnx"
    _export(model, (x,), path, input_names=["x"], output_names=["y"])
    with torch.no_grad():
        reference = model(x).numpy()
    _compare("vit (small)", path, {"x": x.numpy()}, reference, backend=backend)


def test_vit_b_16(backend, tmp_path):
    """The full vit_b_16 at 224x224 on the compiled backend (the interpreter
    would take minutes: the small ViT covers it)."""
    if backend != "cpu":
        pytest.skip("vit_b_16 runs on cpu; the interpreter is covered by test_small_vit")
    model = vision_transformer("b_16")
    x = torch.randn(1, 3, 224, 224)
    path = tmp_path / "vit_b_16.onnx"
    _export(model, (x,), path, input_names=["x"], output_names=["y"])
    with torch.no_grad():
        reference = model(x).numpy()
    _compare("vit_b_16", path, {"x": x.numpy()}, reference)


def test_whisper_encoder_decoder(backend, tmp_path):
    """WhisperForConditionalGeneration from a small config: log-mel features
    and decoder ids -> logits, through ONNX."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("onnxscript")  # torch.export's ONNX exporter
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.WhisperConfig(
        vocab_size=64, num_mel_bins=8, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
        decoder_attention_heads=2, d_model=32, encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=16,
        max_target_positions=32, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    whisper = transformers.WhisperForConditionalGeneration(config).eval()

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.whisper = whisper

        def forward(self, mel, ids):
            return self.whisper(input_features=mel, decoder_input_ids=ids, use_cache=False).logits

    module = Logits().eval()
    mel = torch.randn(2, 8, 32)  # (batch, mel bins, 2 * max_source_positions)
    ids = torch.randint(0, 64, (2, 6))
    path = tmp_path / "whisper.onnx"
    _export(module, (mel, ids), path, dynamo=True, input_names=["mel", "ids"], output_names=["logits"])
    with torch.no_grad():
        reference = module(mel, ids).numpy()
    _compare("whisper", path, {"mel": mel.numpy(), "ids": ids.numpy()}, reference, backend=backend)


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_diffusion_unet_block(backend, dynamo, tmp_path):
    """The UNet block test_torch_backend.py checks through torch.compile, here
    through ONNX, from both exporters."""
    from test_torch_backend import UNetBlock
    torch.manual_seed(0)
    block = UNetBlock().eval()
    x = torch.randn(2, 16, 8, 8)
    t = torch.tensor([3.0, 250.0])
    path = tmp_path / "unet_block.onnx"
    _export(block, (x, t), path, dynamo=dynamo, input_names=["x", "t"], output_names=["y"])
    with torch.no_grad():
        reference = block(x, t).numpy()
    _compare("unet block", path, {"x": x.numpy(), "t": t.numpy()}, reference, backend=backend)
