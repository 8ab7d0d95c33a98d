"""Llama from GGUF files in llama.cpp's conventions (exported here with the
`gguf` package): f32 matches Hugging Face like safetensors does; Q8_0 and
Q4_0 stay quantized in memory and match Hugging Face run on the same
dequantized weights, and stay within a stated distance of the fp32 model."""
import numpy as np
import pytest
import torch

import lumen
from lumen.gguf_export import export_llama, interleave_heads

gguf = pytest.importorskip("gguf")
transformers = pytest.importorskip("transformers")

from test_llama import ATOL, hf_logits, make_model  # noqa: E402


def dequantized_model(model, gguf_path):
    """The HF model with the GGUF file's weights, dequantized by `gguf` and un-interleaved."""
    reader = gguf.GGUFReader(str(gguf_path))
    by_name = {t.name: t for t in reader.tensors}
    cfg = model.config
    out = {}
    for name, value in model.state_dict().items():
        g = lumen.gguf_export.gguf_name(name)
        if g == "output.weight" and g not in by_name:
            g = "token_embd.weight"  # tied embeddings
        if g is None or g not in by_name:
            out[name] = value
            continue
        t = by_name[g]
        w = gguf.quants.dequantize(t.data, t.tensor_type).reshape(value.shape).astype(np.float32)
        if ".self_attn.q_proj." in name or ".self_attn.k_proj." in name:
            heads = cfg.num_attention_heads if "q_proj" in name else cfg.num_key_value_heads
            d = w.shape[0] // heads
            # undo interleave_heads: (h, d/2, 2) -> (h, 2, d/2)
            w = w.reshape(heads, d // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
        out[name] = torch.from_numpy(np.ascontiguousarray(w))
    clone = type(model)(cfg).eval()
    clone.load_state_dict(out)
    return clone


def test_interleave_round_trip():
    w = np.arange(4 * 8 * 3, dtype=np.float32).reshape(32, 3)
    il = interleave_heads(w, 4)
    back = il.reshape(4, 4, 2, 3).swapaxes(1, 2).reshape(32, 3)
    np.testing.assert_array_equal(back, w)
    assert not np.array_equal(il, w)


def test_f32_gguf_prefill_and_decode_match_transformers(tmp_path):
    model, path = make_model(tmp_path)
    f = export_llama(path, tmp_path / "m.gguf", "f32")
    runner = lumen.models.Llama(str(f), capacity=64)
    prompt = [3, 17, 5, 88, 41, 9]
    np.testing.assert_allclose(runner.forward_all(prompt)[0], hf_logits(model, prompt), atol=ATOL, rtol=0)
    tokens = list(prompt)
    for _ in range(32):
        nxt = int(np.argmax(hf_logits(model, tokens)[-1]))
        tokens.append(nxt)
        np.testing.assert_allclose(runner.forward([nxt]), hf_logits(model, tokens)[-1], atol=ATOL, rtol=0)


@pytest.mark.parametrize("qtype,vs_fp32", [("q8_0", 0.03), ("q4_0", 0.3)])
def test_quantized_gguf_matches_dequantized_weights(tmp_path, qtype, vs_fp32):
    model, path = make_model(tmp_path)
    f = export_llama(path, tmp_path / f"m_{qtype}.gguf", qtype)
    reference = dequantized_model(model, f)
    runner = lumen.models.Llama(str(f), capacity=64)
    # The weights stay quantized: about 34 bytes per 32 values, not 128 (Q4_0's
    # nibbles are unpacked to a byte each at load, see io/ggml_blocks.cpp).
    params = sum(p.numel() for p in model.parameters())
    per_block = {"q8_0": 34, "q4_0": 34}[qtype]
    assert runner.weight_bytes < params * (per_block / 32) * 1.1
    prompt = [3, 17, 5, 88, 41, 9, 2, 70]
    got = runner.forward_all(prompt)[0]
    # Exact dequantization: the same numbers as HF on the dequantized weights.
    np.testing.assert_allclose(got, hf_logits(reference, prompt), atol=ATOL, rtol=0)
    # Quantization error against the fp32 model, relative to the logit range.
    full = hf_logits(model, prompt)
    assert np.abs(got - full).max() <= vs_fp32 * np.abs(full).max()
    tokens = list(prompt)
    for _ in range(32):  # decode through the quantized weights too
        nxt = int(np.argmax(hf_logits(reference, tokens)[-1]))
        tokens.append(nxt)
        np.testing.assert_allclose(runner.forward([nxt]), hf_logits(reference, tokens)[-1], atol=ATOL, rtol=0)
