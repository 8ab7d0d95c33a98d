"""Integer dot products for quantized GGUF weights (lumen/compiler/int8_dot.h):
a small Llama in Q8_0 / Q4_0 / Q4_1, made here and written with the `gguf`
package, gives logits within a stated distance of lumen's f32-dequantization
path and of llama.cpp on the same file, and llama.cpp's greedy tokens.

Tolerance: the activation of every matrix product is rounded to 8 bits per
block of 32 (half a step, max|x|/254, per element): about 0.5% of the logit
range on this model (measured 0.5-0.7%), so 2% of the range. llama.cpp
rounds its activations the same way but in another order of operations, and
lumen's f32 path differs from it by as much (0.5-0.7%)."""
import os

import numpy as np
import pytest

import lumen
from lumen.gguf_export import export_llama

pytest.importorskip("gguf")
transformers = pytest.importorskip("transformers")

from test_llama import make_model  # noqa: E402

TOLERANCE = 0.02  # of the logit range
PROMPT = [3, 17, 5, 88, 41, 9, 2, 70]


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("int8")
    # Rows of 128 and 256: multiples of 64, the rewrite's unit (K % 64).
    _, path = make_model(tmp, hidden_size=128, intermediate_size=256, tie_word_embeddings=True)
    return tmp, path


def runner(path, mode, monkeypatch):
    monkeypatch.delenv("LUMEN_INT8_DOT", raising=False)  # it would override the argument
    return lumen.models.Llama(str(path), capacity=64, int8_dot=mode)


def greedy(step, first_logits, n):
    tokens, logits = [], first_logits
    for _ in range(n):
        tokens.append(int(np.argmax(logits)))
        logits = step(tokens[-1])
    return tokens


@pytest.mark.parametrize("qtype", ["q8_0", "q4_0", "q4_1"])
def test_int8_logits_near_f32_path_and_llama_cpp(model_path, qtype, monkeypatch):
    tmp, path = model_path
    f = export_llama(path, tmp / f"m_{qtype}.gguf", qtype)
    # The prompt goes in token by token: decode steps, the matrix-vector products the rewrite
    # takes (a prefill's matrix products keep their f32 kernels).
    f32 = runner(f, "off", monkeypatch)
    assert "int8 dot products" not in f32.report()
    a = np.stack([f32.forward([t]) for t in PROMPT])
    ta = greedy(lambda t: f32.forward([t]), a[-1], 16)
    int8 = runner(f, "on", monkeypatch)
    report = int8.report()
    # Every matrix of the decode program (7 per layer, 2 layers, and the tied output head) was rewritten.
    assert "int8 dot products: 15 contractions" in report, report[:500]
    b = np.stack([int8.forward([t]) for t in PROMPT])
    drift = np.abs(a - b).max() / np.abs(a).max()
    assert 1e-6 < drift < TOLERANCE  # it changes numerics, within the stated distance
    np.testing.assert_array_equal(a.argmax(-1), b.argmax(-1))
    # Decode through the int8 kernels (one row: the matrix-vector products) against the f32 path.
    tb = greedy(lambda t: int8.forward([t]), b[-1], 16)
    assert ta == tb

    llama_cpp = pytest.importorskip("llama_cpp")
    ref = llama_cpp.Llama(model_path=str(f), n_ctx=64, logits_all=True, verbose=False, n_threads=1)
    ref.eval(PROMPT)
    c = np.array(ref.scores[: len(PROMPT)])
    assert np.abs(b - c).max() <= TOLERANCE * np.abs(c).max()

    def llama_cpp_step(token):
        ref.eval([token])
        return np.array(ref.scores[ref.n_tokens - 1])

    tc = greedy(llama_cpp_step, c[-1], 16)
    assert tb == tc


def test_int8_off_without_a_search_budget(model_path, monkeypatch):
    # Auto (the default) with budget 0: the exact f32 path, nothing rewritten.
    tmp, path = model_path
    f = export_llama(path, tmp / "m_auto.gguf", "q4_1")
    monkeypatch.delenv("LUMEN_INT8_DOT", raising=False)
    assert "int8 dot products" not in lumen.models.Llama(str(f), capacity=64).report()


def test_int8_dot_argument_is_checked(model_path):
    tmp, path = model_path
    f = export_llama(path, tmp / "m_arg.gguf", "q8_0")
    with pytest.raises(lumen.Error, match="int8_dot='fast'"):
        lumen.models.Llama(str(f), capacity=64, int8_dot="fast")


def test_int8_q4_k_m_from_llama_cpp_quantizer(tmp_path):
    # Q4_K_M as llama.cpp's quantizer writes it: Q4_K matrices (Q4_1's form on groups of 64, f32 scales
    # and mins) and Q6_K ones (i8 quants, a scale every 16) are both rewritten.
    import ctypes

    llama_cpp = pytest.importorskip("llama_cpp")
    _, path = make_model(tmp_path, hidden_size=256, intermediate_size=512, tie_word_embeddings=True)
    f32 = export_llama(path, tmp_path / "m_f32.gguf", "f32")
    out = tmp_path / "m_q4km.gguf"
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
    params.nthread = 1
    assert llama_cpp.llama_model_quantize(str(f32).encode(), str(out).encode(), ctypes.byref(params)) == 0
    logits = {}
    for mode in ["off", "on"]:
        r = lumen.models.Llama(str(out), capacity=64, int8_dot=mode)
        rewritten = [line for line in r.report().splitlines() if line.startswith("int8 dot products")]
        assert bool(rewritten) == (mode == "on")
        if mode == "on":
            count = int(rewritten[0].split(": ")[1].split()[0])
            assert count == 15  # every projection of the two layers and the LM head, the Q6_K ones too
        logits[mode] = np.stack([r.forward([t]) for t in PROMPT])
    a, b = logits["off"], logits["on"]
    assert 1e-6 < np.abs(a - b).max() / np.abs(a).max() < TOLERANCE
    np.testing.assert_array_equal(a.argmax(-1), b.argmax(-1))
