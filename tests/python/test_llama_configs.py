"""Llama-family configurations as people publish them, against Hugging Face
transformers (random weights, configs built by transformers; nothing
downloaded): hyper-parameters are validated, sliding windows (Mistral, Qwen2)
and biases (Llama attention_bias, mlp_bias) computed, and every tensor of a
checkpoint is used or named in an error."""
import json
import math
import re

import numpy as np
import pytest
import torch

import lumen

transformers = pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")

from lumen.gguf_export import export_llama  # noqa: E402
from test_llama import ATOL, hf_logits, make_model  # noqa: E402


def build(tmp_path, cls_config, cls_model, name, **overrides):
    torch.manual_seed(1)
    common = dict(vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    common.update(overrides)
    model = cls_model(cls_config(**common)).eval()
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "norm" in n:
                p.copy_(torch.rand_like(p) + 0.5)
            elif n.endswith("bias"):
                p.copy_(torch.randn_like(p) * 0.5)
    path = tmp_path / name
    model.save_pretrained(path)
    return model, str(path)


def check_prefill_and_decode(model, path, prompt, steps, capacity=64):
    runner = lumen.models.Llama(path, capacity=capacity)
    assert runner.unused_weights == []
    np.testing.assert_allclose(runner.forward_all(prompt)[0], hf_logits(model, prompt), atol=ATOL, rtol=0)
    tokens = list(prompt)
    for _ in range(steps):  # through the KV cache, past the window
        nxt = int(np.argmax(hf_logits(model, tokens)[-1]))
        tokens.append(nxt)
        np.testing.assert_allclose(runner.forward([nxt]), hf_logits(model, tokens)[-1], atol=ATOL, rtol=0)
    return runner


PROMPT = [3, 17, 5, 88, 41, 9, 0, 62, 7, 33, 21, 50]


# --- sliding windows (issue 14 item 6) ---

def test_mistral_sliding_window_matches_transformers(tmp_path):
    model, path = build(tmp_path, transformers.MistralConfig, transformers.MistralForCausalLM, "mistral",
                        sliding_window=4)
    # the window matters: without it the logits differ
    full = hf_logits(model, PROMPT)
    model.config.sliding_window = None
    assert np.abs(hf_logits(model, PROMPT) - full).max() > 0.05
    model.config.sliding_window = 4
    runner = check_prefill_and_decode(model, path, PROMPT, 32)
    assert "sliding window 4" in runner.summary


def test_qwen2_sliding_window_from_max_window_layers_matches_transformers(tmp_path):
    model, path = build(tmp_path, transformers.Qwen2Config, transformers.Qwen2ForCausalLM, "qwen2",
                        use_sliding_window=True, sliding_window=3, max_window_layers=1)
    assert model.config.layer_types == ["full_attention", "sliding_attention"]
    check_prefill_and_decode(model, path, PROMPT, 32)
    # the same directory without layer_types (older transformers): max_window_layers decides
    config = json.loads((tmp_path / "qwen2" / "config.json").read_text())
    del config["layer_types"]
    (tmp_path / "qwen2" / "config.json").write_text(json.dumps(config))
    runner = lumen.models.Llama(path, capacity=32)
    np.testing.assert_allclose(runner.forward_all(PROMPT)[0], hf_logits(model, PROMPT), atol=ATOL, rtol=0)


def test_qwen2_without_use_sliding_window_ignores_the_window(tmp_path):
    model, path = build(tmp_path, transformers.Qwen2Config, transformers.Qwen2ForCausalLM, "qwen2",
                        use_sliding_window=False, sliding_window=3, max_window_layers=0)
    runner = lumen.models.Llama(path, capacity=32)
    assert "sliding" not in runner.summary
    np.testing.assert_allclose(runner.forward_all(PROMPT)[0], hf_logits(model, PROMPT), atol=ATOL, rtol=0)


# --- biases and unused tensors (issue 14 item 7) ---

def test_llama_attention_bias_and_mlp_bias_match_transformers(tmp_path):
    model, path = build(tmp_path, transformers.LlamaConfig, transformers.LlamaForCausalLM, "llama",
                        attention_bias=True, mlp_bias=True)
    assert model.model.layers[0].self_attn.o_proj.bias is not None
    check_prefill_and_decode(model, path, PROMPT[:6], 32)
    f = export_llama(path, tmp_path / "m.gguf", "f32")  # the biases travel in GGUF too
    runner = lumen.models.Llama(str(f), capacity=32)
    assert runner.unused_weights == []
    np.testing.assert_allclose(runner.forward_all(PROMPT)[0], hf_logits(model, PROMPT), atol=ATOL, rtol=0)


def test_a_checkpoint_tensor_the_model_does_not_use_is_named(tmp_path):
    from safetensors.torch import load_file, save_file
    model, path = build(tmp_path, transformers.LlamaConfig, transformers.LlamaForCausalLM, "llama",
                        attention_bias=True)
    config = json.loads((tmp_path / "llama" / "config.json").read_text())
    config["attention_bias"] = False  # the biases are in the file but the config says no
    (tmp_path / "llama" / "config.json").write_text(json.dumps(config))
    with pytest.raises(lumen.Error, match=r"does not use: 'model.layers.0.self_attn.k_proj.bias'"):
        lumen.models.Llama(path, capacity=16)
    config["attention_bias"] = True
    (tmp_path / "llama" / "config.json").write_text(json.dumps(config))
    weights = load_file(str(tmp_path / "llama" / "model.safetensors"))
    weights["model.layers.0.self_attn.extra.weight"] = torch.zeros(4)
    save_file(weights, str(tmp_path / "llama" / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(lumen.Error, match=r"1 tensor\(s\).*'model.layers.0.self_attn.extra.weight'"):
        lumen.models.Llama(path, capacity=16)
    # rotary inv_freq buffers of older checkpoints are known to be unneeded, and reported
    del weights["model.layers.0.self_attn.extra.weight"]
    weights["model.layers.0.self_attn.rotary_emb.inv_freq"] = torch.ones(8)
    save_file(weights, str(tmp_path / "llama" / "model.safetensors"), metadata={"format": "pt"})
    runner = lumen.models.Llama(path, capacity=16)
    assert runner.unused_weights == ["model.layers.0.self_attn.rotary_emb.inv_freq"]


def test_a_stored_lm_head_with_tied_embeddings_must_equal_the_embedding(tmp_path):
    from safetensors.torch import load_file, save_file
    model, path = make_model(tmp_path, tie_word_embeddings=True)
    weights = load_file(str(tmp_path / "llama" / "model.safetensors"))
    assert "lm_head.weight" not in weights
    weights["lm_head.weight"] = weights["model.embed_tokens.weight"].clone()  # redundant: accepted, reported
    save_file(weights, str(tmp_path / "llama" / "model.safetensors"), metadata={"format": "pt"})
    runner = lumen.models.Llama(path, capacity=16)
    assert runner.unused_weights == ["lm_head.weight"]
    np.testing.assert_allclose(runner.forward_all(PROMPT)[0], hf_logits(model, PROMPT), atol=ATOL, rtol=0)
    # a different head: transformers 4 ignored it, transformers 5 uses it; lumen refuses the contradiction
    weights["lm_head.weight"] = torch.randn(96, 64)
    save_file(weights, str(tmp_path / "llama" / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(lumen.Error, match="ties the LM head to the embedding.*differs from model.embed_tokens.weight"):
        lumen.models.Llama(path, capacity=16)


@pytest.mark.parametrize("extra,message", [
    ("blk.0.ssm_conv1d.weight", "tensor 'blk.0.ssm_conv1d.weight' is not a parameter"),
    # a name lumen maps (Qwen3's q norm) in a llama file: named as a weight the model does not use
    ("blk.0.attn_q_norm.weight", "does not use: 'model.layers.0.self_attn.q_norm.weight'"),
])
def test_a_gguf_tensor_lumen_does_not_know_is_named(tmp_path, extra, message):
    _, path = make_model(tmp_path)
    f = export_llama(path, tmp_path / "m.gguf", "f32")
    reader = gguf.GGUFReader(str(f))
    w = gguf.GGUFWriter(str(tmp_path / "extra.gguf"), "llama")
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name == "general.architecture":
            continue
        value = field.contents()
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_key_value(field.name, value, vtype, sub_type=field.types[-1])
        else:
            w.add_key_value(field.name, value, vtype)
    for t in reader.tensors:
        w.add_tensor(t.name, np.array(t.data).reshape([int(d) for d in reversed(t.shape)]))
    w.add_tensor(extra, np.ones(16, np.float32))
    w.add_tensor("rope_freqs.weight", np.ones(8, np.float32))  # all ones: plain rotary, accepted
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(lumen.Error, match=re.escape(message)):
        lumen.models.Llama(str(tmp_path / "extra.gguf"), capacity=16)


# --- hyper-parameters (issue 14 item 5) ---

@pytest.mark.parametrize("key,value,message", [
    ("rms_norm_eps", -1e-6, r"rms_norm_eps is -1e-06; it must be a finite number greater than 0"),
    ("rms_norm_eps", 0.0, r"rms_norm_eps is 0; it must be"),
    ("rope_theta", 0.0, r"rope_theta is 0; it must be a finite number greater than 0"),
    ("rope_theta", -10000.0, r"rope_theta is -10000"),
    ("num_key_value_heads", 3, r"num_attention_heads \(4\) is not divisible by num_key_value_heads \(3\)"),
    ("hidden_size", 0, r"hidden_size is 0; it must be an integer from 1"),
    ("vocab_size", -5, r"vocab_size is -5"),
    ("intermediate_size", 2**40, r"intermediate_size is 1099511627776"),
    ("max_position_embeddings", 0, r"max_position_embeddings is 0"),
    ("rms_norm_eps", "1e-6", r"'rms_norm_eps' must be a number"),
    ("tie_word_embeddings", "yes", r"'tie_word_embeddings' must be true or false"),
    ("eos_token_id", [2, "x"], r"'eos_token_id' must be an integer or a list of integers"),
    ("sliding_window", 0, r"sliding_window is 0"),
])
def test_bad_hyper_parameters_are_refused_naming_the_key(tmp_path, key, value, message):
    path = tmp_path / "m"
    path.mkdir()
    config = dict(model_type="mistral", vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2)
    config[key] = value
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(lumen.Error, match=message):
        lumen.models.Llama(str(path))


@pytest.mark.parametrize("key,value,message", [
    ("rms_norm_eps", math.nan, r"llama.attention.layer_norm_rms_epsilon is nan"),
    ("rms_norm_eps", -1.0, r"llama.attention.layer_norm_rms_epsilon is -1"),
    ("rope_theta", math.inf, r"llama.rope.freq_base is inf"),
    ("rope_theta", 0.0, r"llama.rope.freq_base is 0"),
])
def test_bad_gguf_hyper_parameters_are_refused_naming_the_key(tmp_path, key, value, message):
    _, path = make_model(tmp_path)
    config = json.loads((tmp_path / "llama" / "config.json").read_text())
    config.pop("rope_parameters", None)
    config[key] = value
    (tmp_path / "llama" / "config.json").write_text(json.dumps(config))  # NaN/inf as Python writes them
    f = export_llama(path, tmp_path / "m.gguf", "f32")
    with pytest.raises(lumen.Error, match=message):
        lumen.models.Llama(str(f))
