"""GGUF legacy quant types beside Q4_0 / Q8_0: Q4_1, Q5_0, Q5_1, F64 and I64 stay
quantized in memory and give the logits of the same model run on the file's
weights dequantized by the `gguf` package (llama.cpp's reference); files that
mix types as llama.cpp writes them load as they are; a truncated file and an
unsupported type give clear errors."""
import numpy as np
import pytest

import lumen
from lumen.gguf_export import export_llama

gguf = pytest.importorskip("gguf")
transformers = pytest.importorskip("transformers")

from test_llama import ATOL, hf_logits, make_model  # noqa: E402
from test_llama_gguf import dequantized_model as reference_model  # noqa: E402

# In-memory bytes per 32 weights (values + f16 scale (+ f16 min)); Q5 quants are unpacked to a byte each.
# Bytes per 32 weights in memory: quants unpacked to a byte each, f16 scales (and mins).
MEMORY_PER_BLOCK = {"q4_1": 36, "q5_0": 34, "q5_1": 36}


def check_against_reference(model, path, decode_steps=8):
    reference = reference_model(model, path)
    # An f32 KV cache: what is checked is the reading of the weights (the f16 cache quantized files
    # get by default has tests of its own, test_kv_cache.py).
    runner = lumen.models.Llama(str(path), capacity=64, kv_cache="f32")
    prompt = [3, 17, 5, 88, 41, 9, 2, 70]
    got = runner.forward_all(prompt)[0]
    np.testing.assert_allclose(got, hf_logits(reference, prompt), atol=ATOL, rtol=0)
    tokens = list(prompt)
    for _ in range(decode_steps):
        nxt = int(np.argmax(hf_logits(reference, tokens)[-1]))
        tokens.append(nxt)
        np.testing.assert_allclose(runner.forward([nxt]), hf_logits(reference, tokens)[-1], atol=ATOL, rtol=0)
    return runner, got


@pytest.mark.parametrize("qtype,vs_fp32", [("q4_1", 0.3), ("q5_0", 0.15), ("q5_1", 0.15)])
def test_legacy_quant_types_match_dequantized_weights(tmp_path, qtype, vs_fp32):
    model, path = make_model(tmp_path)
    f = export_llama(path, tmp_path / f"m_{qtype}.gguf", qtype)
    types = {t.tensor_type.name for t in gguf.GGUFReader(str(f)).tensors}
    assert types == {qtype.upper(), "F32"}
    runner, got = check_against_reference(model, f)
    params = sum(p.numel() for p in model.parameters())
    assert runner.weight_bytes < params * (MEMORY_PER_BLOCK[qtype] / 32) * 1.1  # still quantized in memory
    full = hf_logits(model, [3, 17, 5, 88, 41, 9, 2, 70])
    assert np.abs(got - full).max() <= vs_fp32 * np.abs(full).max()


def test_mixed_types_as_llama_cpp_writes_them(tmp_path):
    # Like SmolLM2's Q4_1 file: tied embeddings, matrices Q4_1, the embedding Q8_0, norms F32;
    # plus one matrix of each other type so every reader meets the others in one file.
    model, path = make_model(tmp_path, tie_word_embeddings=True, num_key_value_heads=4)
    mix = {"token_embd.weight": "q8_0", "blk.0.ffn_down.weight": "q5_0", "blk.1.attn_v.weight": "q5_1",
           "blk.1.attn_q.weight": "q4_0", "blk.0.attn_k.weight": "f16"}
    f = export_llama(path, tmp_path / "mixed.gguf", "q4_1", tensor_types=mix)
    types = {t.name: t.tensor_type.name for t in gguf.GGUFReader(str(f)).tensors}
    assert "output.weight" not in types
    assert types["token_embd.weight"] == "Q8_0" and types["blk.0.ffn_down.weight"] == "Q5_0"
    assert types["blk.0.ffn_up.weight"] == "Q4_1" and types["blk.0.attn_norm.weight"] == "F32"
    check_against_reference(model, f, decode_steps=16)


def test_truncated_file_names_tensor_and_type(tmp_path):
    model, path = make_model(tmp_path)
    f = export_llama(path, tmp_path / "m.gguf", "q4_1")
    data = f.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: len(data) - 3000])
    with pytest.raises(lumen.Error, match=r"tensor '[\w.]+' \(Q4_1 \(3\), \d+ bytes at offset \d+\) lies outside .*truncated"):
        lumen.models.Llama(str(cut), capacity=16)


def rewrite_tensor_type(path, out, name, new_type):
    """A copy of `path` with tensor `name`'s type id replaced (its data size kept by the caller's choice)."""
    reader = gguf.GGUFReader(str(path))
    t = next(t for t in reader.tensors if t.name == name)
    type_field = t.field.parts[-2]  # [.., dims, type, offset]
    data = bytearray(path.read_bytes())
    at = type_field.ctypes.data - reader.data.ctypes.data
    data[at:at + 4] = int(new_type).to_bytes(4, "little")
    out.write_bytes(bytes(data))
    return out


def test_unsupported_types_give_clear_errors(tmp_path):
    model, path = make_model(tmp_path, hidden_size=256, intermediate_size=256, num_attention_heads=4)
    f = export_llama(path, tmp_path / "m.gguf", "q4_1")
    # Q2_K (10): a known type lumen does not load yet. 256 columns of Q4_1 are 160 bytes a row; of Q2_K 84:
    # the tensor still lies inside the data section, so the error is the type's.
    q2k = rewrite_tensor_type(f, tmp_path / "q2k.gguf", "blk.0.ffn_down.weight", 10)
    with pytest.raises(lumen.Error, match=r"tensor 'blk.0.ffn_down.weight' has type Q2_K \(10\); "
                                          r"lumen reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, "
                                          r"Q6_K, F64 and I64"):
        lumen.models.Llama(str(q2k), capacity=16)
    bogus = rewrite_tensor_type(f, tmp_path / "bogus.gguf", "blk.0.ffn_down.weight", 99)
    with pytest.raises(lumen.Error, match=r"tensor 'blk.0.ffn_down.weight' has unknown type 99; lumen reads F32"):
        lumen.models.Llama(str(bogus), capacity=16)
