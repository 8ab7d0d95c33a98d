"""The Llama-family decoder against Hugging Face transformers on the same
weights (random, saved as safetensors; nothing downloaded): prefill logits
and 32 decode steps through the persistent KV cache."""
import json

import numpy as np
import pytest
import torch

import lumen

transformers = pytest.importorskip("transformers")

# fp32 logits: lumen and torch sum in different orders.
ATOL = 2e-4


def make_model(tmp_path, kind="llama", **overrides):
    torch.manual_seed(0)
    common = dict(vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    common.update(overrides)
    if kind == "qwen2":
        config = transformers.Qwen2Config(**common)
        model = transformers.Qwen2ForCausalLM(config)
    else:
        config = transformers.LlamaConfig(**common)
        model = transformers.LlamaForCausalLM(config)
    model.eval()
    with torch.no_grad():  # random norms, so a wrong norm weight shows
        for name, p in model.named_parameters():
            if "norm" in name or name.endswith("bias"):
                p.copy_(torch.rand_like(p) + 0.5 if "norm" in name else torch.randn_like(p) * 0.1)
    path = tmp_path / kind
    model.save_pretrained(path)
    return model, str(path)


def hf_logits(model, tokens):
    with torch.no_grad():
        return model(torch.tensor([tokens])).logits[0].numpy()


@pytest.mark.parametrize("kind,overrides", [
    ("llama", {}),
    ("llama", {"num_key_value_heads": 4, "tie_word_embeddings": True}),
    ("qwen2", {"rope_theta": 1000000.0}),
])
def test_prefill_and_32_decode_steps_match_transformers(tmp_path, kind, overrides):
    model, path = make_model(tmp_path, kind, **overrides)
    runner = lumen.models.Llama(path, capacity=64)
    prompt = [3, 17, 5, 88, 41, 9, 0, 62]
    got = runner.forward_all(prompt)[0]
    np.testing.assert_allclose(got, hf_logits(model, prompt), atol=ATOL, rtol=0)
    tokens = list(prompt)
    for _ in range(32):  # greedy: feed the argmax back one token at a time
        nxt = int(np.argmax(hf_logits(model, tokens)[-1]))
        tokens.append(nxt)
        step = runner.forward([nxt])
        np.testing.assert_allclose(step, hf_logits(model, tokens)[-1], atol=ATOL, rtol=0)
    assert runner.position == len(tokens)


def test_generate_matches_transformers_greedy_and_sampling_is_seeded(tmp_path):
    model, path = make_model(tmp_path)
    runner = lumen.models.Llama(path, capacity=64)
    prompt = [1, 2, 3, 4]
    with torch.no_grad():
        want = model.generate(torch.tensor([prompt]), max_new_tokens=20, do_sample=False,
                              eos_token_id=None, pad_token_id=0)[0, len(prompt):].tolist()
    got, stats = runner.generate(prompt, max_new_tokens=20)
    assert got == want
    assert stats["decode_tokens_per_second"] > 0
    runner.reset()
    a, _ = runner.generate(prompt, max_new_tokens=12, temperature=0.8, top_k=20, top_p=0.9, seed=7)
    runner.reset()
    b, _ = runner.generate(prompt, max_new_tokens=12, temperature=0.8, top_k=20, top_p=0.9, seed=7)
    runner.reset()
    c, _ = runner.generate(prompt, max_new_tokens=12, temperature=0.8, top_k=20, top_p=0.9, seed=8)
    assert a == b and len(a) == 12
    assert a != c  # a different seed samples differently (12 tokens from ~20 candidates)


def test_prefill_in_chunks_equals_prefill_at_once(tmp_path):
    _, path = make_model(tmp_path)
    runner = lumen.models.Llama(path, capacity=32)
    tokens = [5, 6, 7, 8, 9, 10, 11]
    whole = runner.forward(tokens)
    runner.reset()
    runner.forward(tokens[:3])
    runner.forward(tokens[3:5])
    parts = runner.forward(tokens[5:])
    np.testing.assert_allclose(parts, whole, atol=1e-5)
    # The first prompt ran the program with past = 0 built in, the later chunks the general one.
    assert "prefill-from-the-start program:" in runner.report()


def test_errors_are_clear(tmp_path):
    _, path = make_model(tmp_path)
    runner = lumen.models.Llama(path, capacity=8)
    with pytest.raises(lumen.Error, match="outside the vocabulary"):
        runner.forward([96])
    runner.forward([1, 2, 3, 4, 5, 6])
    with pytest.raises(lumen.Error, match="capacity of 8"):
        runner.forward([1, 2, 3])
    with pytest.raises(lumen.Error, match="neither a GGUF file nor a model directory"):
        lumen.models.Llama(str(tmp_path / "nope"))
    config = json.loads((tmp_path / "llama" / "config.json").read_text())
    config["hidden_size"] = 32  # weights no longer fit the config
    (tmp_path / "llama" / "config.json").write_text(json.dumps(config))
    with pytest.raises(lumen.Error, match="model expects"):
        lumen.models.Llama(path)
    config["hidden_size"] = 64
    config["rope_scaling"] = {"rope_type": "longrope", "factor": 4.0}
    (tmp_path / "llama" / "config.json").write_text(json.dumps(config))
    with pytest.raises(lumen.Error, match="rope type 'longrope'"):
        lumen.models.Llama(path)
