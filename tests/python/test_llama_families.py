"""The model families people deploy, against Hugging Face transformers
(random weights, small configs built by transformers; nothing downloaded):
Llama 3 (rope scaling llama3, linear, dynamic and yarn), Gemma (GeGLU with gelu-tanh,
(1 + w) RMSNorm, embeddings scaled by sqrt(hidden), a head_dim of its own,
tied embeddings), Qwen2, Qwen3 (q/k norms per head), Mistral, Phi-3 (fused projections) and Gemma-2 (sandwich norms, soft-capping,
alternating sliding windows). For each: prefill logits and 32 greedy
decode steps through the KV cache, and the same weights exported as GGUF in
llama.cpp's conventions load and give the same prefill logits."""
import json

import numpy as np
import pytest
import torch

import lumen

transformers = pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")

from lumen.gguf_export import export_llama  # noqa: E402
from test_llama import ATOL, hf_logits  # noqa: E402

PROMPT = [3, 17, 5, 88, 41, 9, 0, 62, 7, 33, 21, 50]
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 64}

FAMILIES = {
    # original_max_position 64 with head_dim 16: frequencies kept, blended and divided all occur
    "llama3": ("Llama", dict(rope_scaling=LLAMA3)),
    "llama_linear": ("Llama", dict(rope_scaling={"rope_type": "linear", "factor": 4.0})),
    # the base grows once the sequence passes max_position_embeddings (8): from the 12-token prompt on
    "llama_dynamic": ("Llama", dict(rope_scaling={"rope_type": "dynamic", "factor": 2.0}, max_position_embeddings=8)),
    # head_dim 16 over an original context of 32: frequency 0 kept, 1 blended, the rest divided; cos, sin times 1.139
    "llama_yarn": ("Llama", dict(rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32})),
    # heads · head_dim (4 · 24) differs from hidden_size (64), as in Gemma-7B
    "gemma": ("Gemma", dict(head_dim=24, hidden_act="gelu_pytorch_tanh")),
    "qwen2": ("Qwen2", dict(rope_theta=1000000.0)),
    # q_norm / k_norm over each head before rotary; head_dim 24 of its own (4 · 24 != 64)
    "qwen3": ("Qwen3", dict(head_dim=24, rope_theta=1000000.0)),
    "mistral": ("Mistral", dict(sliding_window=None)),
    # fused qkv_proj and gate_up_proj, split when loading; a window of 8 over every layer
    "phi3": ("Phi3", dict(sliding_window=8, bos_token_id=1, eos_token_id=2, pad_token_id=0)),
    # sandwich norms, a window of 8 on layer 0, the scale from query_pre_attn_scalar (20, not head_dim 24),
    # caps low enough to bite on random weights
    "gemma2": ("Gemma2", dict(head_dim=24, sliding_window=8, query_pre_attn_scalar=20, attn_logit_softcapping=5.0,
                              final_logit_softcapping=3.0)),
}


def build(tmp_path, name):
    family, overrides = FAMILIES[name]
    torch.manual_seed(3)
    common = dict(vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    common.update(overrides)
    config = getattr(transformers, family + "Config")(**common)
    model = getattr(transformers, family + "ForCausalLM")(config).eval()
    with torch.no_grad():  # random norms and biases, so a wrong norm or bias shows
        for n, p in model.named_parameters():
            if n.endswith(("q_proj.weight", "k_proj.weight", "qkv_proj.weight")):
                p.mul_(8.0)  # sharp attention, so positions (rotary and its scaling) change the logits
            elif "norm" in n:
                p.copy_(torch.rand_like(p) + 0.5)
            elif n.endswith("bias"):
                p.copy_(torch.randn_like(p) * 0.5)
    path = tmp_path / name
    model.save_pretrained(path)
    return model, str(path)


def decode_reference(model, name, steps=32):
    """(token, logits) for `steps` greedy steps after PROMPT. Dynamic rope
    scaling depends on how the keys were computed: transformers' cache keeps
    each key as rotated when it came (as lumen's does), so that family is
    compared with transformers decoding through its cache."""
    out, tokens = [], list(PROMPT)
    if name != "llama_dynamic":
        for _ in range(steps):
            tokens.append(int(np.argmax(hf_logits(model, tokens)[-1])))
            out.append((tokens[-1], hf_logits(model, tokens)[-1]))
        return out
    with torch.no_grad():
        result = model(torch.tensor([tokens]), use_cache=True)
        for _ in range(steps):
            nxt = int(result.logits[0, -1].argmax())
            result = model(torch.tensor([[nxt]]), cache=result.cache, use_cache=True)
            out.append((nxt, result.logits[0, -1].numpy()))
    return out


@pytest.mark.parametrize("name", list(FAMILIES))
def test_prefill_and_32_decode_steps_match_transformers_and_gguf_loads(tmp_path, name):
    model, path = build(tmp_path, name)
    runner = lumen.models.Llama(path, capacity=64)
    assert runner.unused_weights == []
    if name == "llama3":
        assert "rope llama3 x8" in runner.summary
    want = hf_logits(model, PROMPT)
    np.testing.assert_allclose(runner.forward_all(PROMPT)[0], want, atol=ATOL, rtol=0)
    runner.reset()
    np.testing.assert_allclose(runner.forward(PROMPT), want[-1], atol=ATOL, rtol=0)
    for nxt, logits in decode_reference(model, name):
        np.testing.assert_allclose(runner.forward([nxt]), logits, atol=ATOL, rtol=0)
    if name == "llama_dynamic":  # llama.cpp has no dynamic NTK scaling
        with pytest.raises(ValueError, match="rope type 'dynamic' has no GGUF form"):
            export_llama(path, tmp_path / f"{name}.gguf", "f32")
        return
    f = export_llama(path, tmp_path / f"{name}.gguf", "f32")
    from_gguf = lumen.models.Llama(str(f), capacity=64)
    assert from_gguf.unused_weights == []
    np.testing.assert_allclose(from_gguf.forward_all(PROMPT)[0], want, atol=ATOL, rtol=0)


@pytest.mark.parametrize("name", ["llama3", "llama_dynamic", "llama_yarn"])
def test_rope_scaling_changes_the_logits(tmp_path, name):
    """Without the scaling the logits differ, so the match above is not by accident."""
    model, path = build(tmp_path, name)
    scaled = hf_logits(model, PROMPT)
    config = json.loads((tmp_path / name / "config.json").read_text())
    config.pop("rope_scaling", None)
    config["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0}
    (tmp_path / name / "config.json").write_text(json.dumps(config))
    plain = lumen.models.Llama(path, capacity=32).forward_all(PROMPT)[0]
    assert np.abs(plain - scaled).max() > 0.01  # 50 x the tolerance (dynamic: 0.04, its base only doubles at 12 of 8)


def test_gemma_activation_matters(tmp_path):
    """Gemma's gelu-tanh is needed for the match (SiLU, Llama's, gives other logits)."""
    model, path = build(tmp_path, "gemma")
    want = hf_logits(model, PROMPT)
    runner = lumen.models.Llama(path, capacity=32)
    assert "gelu_tanh MLP" in runner.summary and "head_dim 24" in runner.summary
    np.testing.assert_allclose(runner.forward_all(PROMPT)[0], want, atol=ATOL, rtol=0)
    config = json.loads((tmp_path / "gemma" / "config.json").read_text())
    config["hidden_act"] = "silu"
    (tmp_path / "gemma" / "config.json").write_text(json.dumps(config))
    assert np.abs(lumen.models.Llama(path, capacity=32).forward_all(PROMPT)[0] - want).max() > 0.01


@pytest.mark.parametrize("change", [
    dict(attn_logit_softcapping=None), dict(final_logit_softcapping=None), dict(query_pre_attn_scalar=24),
    dict(layer_types=["full_attention", "full_attention"]),
])
def test_gemma2_caps_scale_and_window_matter(tmp_path, change):
    """Each of Gemma-2's departures changes the logits, so the match above tests it."""
    model, path = build(tmp_path, "gemma2")
    want = hf_logits(model, PROMPT + PROMPT)  # 24 tokens: past the window of 8
    config = json.loads((tmp_path / "gemma2" / "config.json").read_text())
    config.update(change)
    (tmp_path / "gemma2" / "config.json").write_text(json.dumps(config))
    assert np.abs(lumen.models.Llama(path, capacity=32).forward_all(PROMPT + PROMPT)[0] - want).max() > 1e-3


@pytest.mark.parametrize("rope,message", [
    ({"rope_type": "longrope", "factor": 4.0}, r"rope type 'longrope' is not supported \(default, linear, llama3, dynamic, yarn\)"),
    ({"rope_type": "yarn", "factor": 4.0, "beta_fast": -1.0}, r"yarn rope scaling needs beta_fast, beta_slow > 0"),
    ({"rope_type": "llama3", "factor": 0.5}, r"'rope_parameters.factor' is 0.5"),
    ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0},
     r"0 < low_freq_factor < high_freq_factor"),
])
def test_unsupported_or_bad_rope_scaling_is_refused(tmp_path, rope, message):
    path = tmp_path / "m"
    path.mkdir()
    config = dict(model_type="llama", vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, rope_parameters=dict(rope, rope_theta=10000.0))
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(lumen.Error, match=message):
        lumen.models.Llama(str(path))


@pytest.mark.parametrize("model_type,extra,message", [
    ("phi3", dict(rope_parameters=dict(rope_type="longrope", rope_theta=10000.0, short_factor=[1.0] * 8,
                                       long_factor=[1.0] * 8)), r"rope type 'longrope' is not supported"),
    ("phi3", dict(partial_rotary_factor=0.5), r"partial_rotary_factor is 0.5"),
    ("gemma3_text", {}, r"model_type 'gemma3_text' is not a Llama-family decoder lumen computes"),
])
def test_unsupported_family_options_are_refused_by_name(tmp_path, model_type, extra, message):
    path = tmp_path / "m"
    path.mkdir()
    config = dict(model_type=model_type, vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, **extra)
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(lumen.Error, match=message):
        lumen.models.Llama(str(path))


def test_an_unknown_activation_is_refused(tmp_path):
    path = tmp_path / "m"
    path.mkdir()
    config = dict(model_type="gemma", vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=16, hidden_activation="quick_gelu")
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(lumen.Error, match=r"the activation 'quick_gelu' is not supported"):
        lumen.models.Llama(str(path))
