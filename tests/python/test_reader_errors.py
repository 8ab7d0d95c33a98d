"""Bad weight files reach Python as lumen.Error with readable messages: bytes
of the file that are not UTF-8 are escaped (no UnicodeDecodeError), GGUF
metadata of the wrong type names the key and both types (no bare
RuntimeError from std::bad_variant_access), safetensors headers that the
reference reader rejects are rejected."""
import json
import struct

import numpy as np
import pytest

import lumen

gguf = pytest.importorskip("gguf")
safetensors_numpy = pytest.importorskip("safetensors.numpy")


def write_safetensors(path, header_bytes, data=b""):
    path.write_bytes(struct.pack("<Q", len(header_bytes)) + header_bytes + data)
    return str(path)


def test_safetensors_bytes_in_messages_are_escaped(tmp_path):
    bad = write_safetensors(tmp_path / "bad.safetensors", b'{"w\xff\xfe": 1}')
    with pytest.raises(lumen.Error, match="not valid JSON"):
        lumen.io.load_safetensors(bad)
    dtype = write_safetensors(tmp_path / "dtype.safetensors",
                              b'{"t": {"dtype": "\\u0007\xc3\xa9", "shape": [1], "data_offsets": [0, 4]}}', b"\0" * 4)
    with pytest.raises(lumen.Error, match=r"dtype '\\x07\u00e9' is not supported"):
        lumen.io.load_safetensors(dtype)


@pytest.mark.parametrize("name,header,data", [
    ("gap", {"a": [0, 4], "b": [8, 12]}, 12),
    ("overlap", {"a": [0, 4], "b": [0, 4]}, 4),
    ("trailing", {"a": [0, 4]}, 8),
    ("late", {"a": [4, 8]}, 8),
])
def test_safetensors_rejected_like_the_reference_reader(tmp_path, name, header, data):
    h = {k: {"dtype": "F32", "shape": [1], "data_offsets": v} for k, v in header.items()}
    path = write_safetensors(tmp_path / f"{name}.safetensors", json.dumps(h).encode(), b"\0" * data)
    with pytest.raises(Exception):  # the reference reader refuses it too
        safetensors_numpy.load_file(path)
    with pytest.raises(lumen.Error, match="a gap|overlapping|trailing bytes"):
        lumen.io.load_safetensors(path)


def test_safetensors_duplicate_and_nul_names(tmp_path):
    dup = (b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
           b'"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}')
    with pytest.raises(lumen.Error, match="repeats the key 'a'"):
        lumen.io.load_safetensors(write_safetensors(tmp_path / "dup.safetensors", dup, b"\0" * 8))
    nul = (b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
           b'"a\\u0000b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}')
    with pytest.raises(lumen.Error, match=r"tensor 'a\\x00b': .*no NUL byte"):
        lumen.io.load_safetensors(write_safetensors(tmp_path / "nul.safetensors", nul, b"\0" * 8))


def test_safetensors_deep_nesting(tmp_path):
    deep = b'{"a": {"dtype": "F32", "shape": ' + b"[" * 100000 + b"]" * 100000 + b', "data_offsets": [0, 0]}}'
    with pytest.raises(lumen.Error, match="nests deeper than 64"):
        lumen.io.load_safetensors(write_safetensors(tmp_path / "deep.safetensors", deep))


def gguf_vocab(path, flag_value):
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model("llama")
    w.add_token_list(["<unk>", "<s>", "</s>", "a", "b"])
    w.add_token_scores([0.0] * 5)
    w.add_token_types([1] * 5)
    flag_value(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


@pytest.mark.parametrize("kind,add", [
    ("u8", lambda w: w.add_uint8("tokenizer.ggml.add_bos_token", 1)),
    ("string", lambda w: w.add_string("tokenizer.ggml.add_bos_token", "true")),
])
def test_gguf_flag_of_wrong_type(tmp_path, kind, add):
    path = gguf_vocab(tmp_path / f"{kind}.gguf", add)
    with pytest.raises(lumen.Error, match=f"metadata 'tokenizer.ggml.add_bos_token' is {kind}, expected bool"):
        lumen.io.Tokenizer.from_gguf(path)


def test_gguf_flag_of_right_type_loads(tmp_path):
    path = gguf_vocab(tmp_path / "ok.gguf", lambda w: w.add_bool("tokenizer.ggml.add_bos_token", True))
    assert lumen.io.Tokenizer.from_gguf(path).vocab_size == 5


def test_gguf_bytes_in_messages_are_escaped(tmp_path):
    path = tmp_path / "arch.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tensor("token_embd.weight", np.zeros((4, 8), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    data = path.read_bytes().replace(b"llama", b"ll\xffm\x01", 1)
    path.write_bytes(data)
    with pytest.raises(lumen.Error, match=r"general.architecture 'll\\xffm\\x01' is not a Llama-family decoder"):
        lumen.models.Llama(str(path), capacity=8)
