"""The KV cache's dtype (LlamaRunnerOptions::kv_cache): f16 by default for block-quantized GGUF weights (llama.cpp's
default cache), f32 otherwise; f16 and bf16 on request. A half-precision cache holds keys and values rounded as they
are stored: its logits stay within a stated tolerance of the f32 cache's, greedy tokens agree, and the state really is
half precision (half the bytes)."""
import subprocess

import numpy as np
import pytest

import lumen
from lumen.gguf_export import export_llama

pytest.importorskip("transformers")

from test_llama import make_model  # noqa: E402
from test_llama_generation import CLI, needs_cli  # noqa: E402

PROMPT = [3, 17, 5, 88, 41, 9, 2, 70, 11, 64, 30, 7]
# Keys and values rounded to f16 (2^-11 relative) or bf16 (2^-8): the logits move by a fraction of that.
TOLERANCE = {"f16": 5e-4, "bf16": 5e-3}  # measured: 7e-5 and 7e-4 of the largest logit


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kv")
    model, path = make_model(tmp)
    return {"safetensors": path, "f32": str(export_llama(path, tmp / "m_f32.gguf", "f32")),
            "q8_0": str(export_llama(path, tmp / "m_q8.gguf", "q8_0"))}


@pytest.mark.parametrize("which,want", [("safetensors", "f32"), ("f32", "f32"), ("q8_0", "f16")])
def test_default_cache_dtype_follows_the_weights(files, which, want):
    runner = lumen.models.Llama(files[which], capacity=32)
    assert runner.kv_cache == want
    assert f"KV cache: {want}, 32 positions" in runner.report()


def run(path, kv_cache, steps=12):
    """Prefill, then greedy decode: the logits of every step and the tokens."""
    r = lumen.models.Llama(path, capacity=64, kv_cache=kv_cache)
    logits = [r.forward(PROMPT)]
    tokens = []
    for _ in range(steps):
        tokens.append(int(np.argmax(logits[-1])))
        logits.append(r.forward([tokens[-1]]))
    return r, np.stack(logits), tokens


@pytest.mark.parametrize("half", ["f16", "bf16"])
def test_a_half_precision_cache_stays_near_the_f32_one(files, half):
    _, want, want_tokens = run(files["q8_0"], "f32")
    r, got, tokens = run(files["q8_0"], half)
    assert r.kv_cache == half
    scale = np.abs(want).max()
    diff = np.abs(got - want).max() / scale
    assert 0 < diff < TOLERANCE[half], diff  # rounded (not f32 under another name), and only that much
    assert tokens == want_tokens
    # The caches are half precision: their state buffers take half the bytes.
    assert r.kv_cache_bytes * 2 == lumen.models.Llama(files["q8_0"], capacity=64, kv_cache="f32").kv_cache_bytes


def test_a_cache_dtype_lumen_does_not_keep_is_a_clear_error(files):
    with pytest.raises(lumen.Error, match="KV cache 'i8'.*auto, f32, f16 or bf16"):
        lumen.models.Llama(files["f32"], capacity=16, kv_cache="i8")


@needs_cli
def test_the_cli_takes_the_cache_dtype(files):
    args = ["generate", "-m", files["f32"], "--tokens", "3,17,5", "-n", "4", "--kv-cache", "f16"]
    out = subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    bad = subprocess.run([str(CLI), "generate", "-m", files["f32"], "--tokens", "3,17,5", "--kv-cache", "f8"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "--kv-cache" in bad.stderr
