"""GGUF k-quants (Q4_K, Q5_K, Q6_K) as llama.cpp writes them: a Q4_K_M, a Q5_K_M and a Q6_K file, quantized here by
llama.cpp's own llama_model_quantize from a random-weight model, load, stay quantized in memory, and give the logits
(prefill and decode) of the same model run on the file's weights dequantized by the `gguf` package."""
import ctypes

import numpy as np
import pytest

import lumen
from lumen.gguf_export import export_llama

gguf = pytest.importorskip("gguf")
llama_cpp = pytest.importorskip("llama_cpp")
pytest.importorskip("transformers")

from test_gguf_quant_types import check_against_reference  # noqa: E402
from test_llama import hf_logits, make_model  # noqa: E402


def quantize(f32_path, out, ftype):
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{ftype}")
    params.nthread = 1
    assert llama_cpp.llama_model_quantize(str(f32_path).encode(), str(out).encode(), ctypes.byref(params)) == 0
    return out


@pytest.fixture(scope="module")
def model_and_f32(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kquants")
    # Rows of 256 and 512: whole k-quant super-blocks, so llama.cpp keeps the k-quant types.
    model, path = make_model(tmp, hidden_size=256, intermediate_size=512, num_attention_heads=4,
                             num_key_value_heads=2)
    return model, export_llama(path, tmp / "m_f32.gguf", "f32"), tmp


@pytest.mark.parametrize("ftype,types,bytes_per_weight", [
    ("Q4_K_M", {"Q4_K", "Q6_K", "F32"}, 0.85),
    ("Q5_K_M", {"Q5_K", "Q6_K", "F32"}, 1.3),
    ("Q6_K", {"Q6_K", "F32"}, 1.05),
])
def test_k_quant_files_match_dequantized_weights(model_and_f32, ftype, types, bytes_per_weight):
    model, f32, tmp = model_and_f32
    f = quantize(f32, tmp / f"m_{ftype}.gguf", ftype)
    assert {t.tensor_type.name for t in gguf.GGUFReader(str(f)).tensors} == types
    runner, got = check_against_reference(model, f)
    params = sum(p.numel() for p in model.parameters())
    # Bytes a weight in memory, with f32 sub-block scales (and mins): Q4_K's nibbles 0.75, Q5_K's quants a byte
    # each 1.25, Q6_K's nibbles and bit pairs as the file packs them 1.0 (the file's 0.82 plus wider scales).
    assert runner.weight_bytes < params * bytes_per_weight
    full = hf_logits(model, [3, 17, 5, 88, 41, 9, 2, 70])
    assert np.abs(got - full).max() <= 0.3 * np.abs(full).max()  # and near the unquantized model


def test_a_k_quant_tensor_with_a_wrong_row_size_is_a_clear_error(model_and_f32, tmp_path):
    # Q4_K needs whole super-blocks of 256: a 96-column tensor labelled Q4_K cannot be one.
    from test_gguf_quant_types import rewrite_tensor_type
    model, path = make_model(tmp_path, hidden_size=96, intermediate_size=96, num_attention_heads=4,
                             num_key_value_heads=2)
    f = export_llama(path, tmp_path / "m.gguf", "q8_0")
    bad = rewrite_tensor_type(f, tmp_path / "bad.gguf", "blk.0.ffn_down.weight", 12)
    with pytest.raises(lumen.Error, match=r"blk.0.ffn_down.weight.*Q4_K.*256"):
        lumen.models.Llama(str(bad), capacity=16)
