"""Writes the seed corpora of the file-reader fuzzers (tests/fuzz/corpus/):
small valid files that reach every branch a reader has — each safetensors
dtype, GGUF metadata of every value type, a tiny Llama with every tensor type
lumen reads. Deterministic; rerun after changing it and commit the output.

    python3 scripts/make_fuzz_corpus.py
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fuzz" / "corpus"


def safetensors_bytes(tensors: dict[str, tuple[str, list[int], bytes]], metadata: dict | None = None) -> bytes:
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds(out: Path) -> None:
    rng = np.random.default_rng(0)
    f32 = rng.standard_normal((2, 3)).astype(np.float32)
    every = {
        "w.f32": ("F32", [2, 3], f32.tobytes()),
        "w.f16": ("F16", [3], rng.standard_normal(3).astype(np.float16).tobytes()),
        "w.bf16": ("BF16", [2, 1], (f32.view(np.uint32)[0, :2] >> 16).astype(np.uint16).tobytes()),
        "w.f64": ("F64", [2], np.array([1.5, -2.0]).tobytes()),
        "ids.i64": ("I64", [3], np.array([1, -7, 2**31 - 1], np.int64).tobytes()),
        "ids.i32": ("I32", [1, 1, 2], np.array([5, -5], np.int32).tobytes()),
        "q.i8": ("I8", [4], np.array([-128, 0, 1, 127], np.int8).tobytes()),
        "q.u8": ("U8", [2, 2], bytes([0, 1, 200, 255])),
        "mask": ("BOOL", [3], bytes([1, 0, 1])),
        "empty": ("F32", [0, 4], b""),
    }
    (out / "every_dtype.safetensors").write_bytes(safetensors_bytes(every, {"format": "pt", "note": "é"}))
    layer = {f"model.layers.0.{n}.weight": ("F32", [4, 4], rng.standard_normal(16).astype(np.float32).tobytes())
             for n in ("self_attn.q_proj", "mlp.up_proj")}
    (out / "two_tensors.safetensors").write_bytes(safetensors_bytes(layer))
    (out / "empty.safetensors").write_bytes(safetensors_bytes({}))


def gguf_llama(path: Path, arch: str = "llama") -> None:
    import gguf
    from gguf import GGMLQuantizationType as Q

    dim, heads, kv_heads, hidden, vocab = 32, 2, 1, 32, 8
    head_dim = dim // heads
    rng = np.random.default_rng(1)
    w = gguf.GGUFWriter(str(path), arch)
    w.add_context_length(64)
    w.add_embedding_length(dim)
    w.add_block_count(1)
    w.add_feed_forward_length(hidden)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_key_length(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    tokens = ["<unk>", "<s>", "</s>", "a", "b", "ab", "\u2581", "<0x41>"]
    w.add_token_list(tokens)
    w.add_token_scores([0.0, 0.0, 0.0, -1.0, -2.0, -0.5, -3.0, -4.0])
    w.add_token_types([2, 3, 3, 1, 1, 1, 1, 6])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_bool("tokenizer.ggml.add_bos_token", True)

    def matrix(rows: int, cols: int) -> np.ndarray:
        return rng.standard_normal((rows, cols)).astype(np.float32)

    def add(name: str, value: np.ndarray, qtype: Q | None = None) -> None:
        if qtype is None:
            w.add_tensor(name, value)
        elif qtype == Q.F16:
            w.add_tensor(name, value.astype(np.float16))
        else:
            w.add_tensor(name, gguf.quants.quantize(value, qtype), raw_dtype=qtype)

    add("token_embd.weight", matrix(vocab, dim), Q.Q8_0)
    add("output_norm.weight", np.ones(dim, np.float32))
    add("blk.0.attn_norm.weight", np.ones(dim, np.float32))
    add("blk.0.ffn_norm.weight", np.ones(dim, np.float32))
    add("blk.0.attn_q.weight", matrix(dim, dim), Q.Q4_1)
    add("blk.0.attn_k.weight", matrix(kv_heads * head_dim, dim), Q.F16)
    add("blk.0.attn_v.weight", matrix(kv_heads * head_dim, dim), Q.Q5_1)
    add("blk.0.attn_output.weight", matrix(dim, dim), Q.Q4_0)
    add("blk.0.ffn_gate.weight", matrix(hidden, dim), Q.Q5_0)
    add("blk.0.ffn_up.weight", matrix(hidden, dim), Q.Q4_1)
    add("blk.0.ffn_down.weight", matrix(dim, hidden), Q.Q8_0)
    if arch == "qwen2":
        for n, rows in (("attn_q", dim), ("attn_k", kv_heads * head_dim), ("attn_v", kv_heads * head_dim)):
            add(f"blk.0.{n}.bias", rng.standard_normal(rows).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def gguf_metadata(path: Path) -> None:
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -3)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -300)
    w.add_uint32("t.u32", 7)
    w.add_int32("t.i32", -7)
    w.add_float32("t.f32", 0.5)
    w.add_uint64("t.u64", 2**40)
    w.add_int64("t.i64", -(2**40))
    w.add_float64("t.f64", 1e-9)
    w.add_bool("t.bool", False)
    w.add_string("t.string", "h\u00e9llo")
    w.add_array("t.ints", [1, 2, 3])
    w.add_array("t.strings", ["x", "", "yz"])
    w.add_array("t.nested", [[1, 2], [3]])
    w.add_tensor("x", np.arange(4, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def onnx_seeds(out: Path) -> None:
    """Small ONNX models: initializers (raw and typed fields), int64 shapes,
    a dynamic dim, several op families, If with a constant condition, a Loop."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [-1, 3])  # typed field, not raw_data
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Reshape", ["r", "shape"], ["s"]), helper.make_node("Softmax", ["s"], ["y"], axis=-1)]
    models = {"mlp": helper.make_graph(nodes, "mlp", [x], [y], [w, shape])}
    img = helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 2, 5, 5])
    k = numpy_helper.from_array(rng.standard_normal((3, 2, 3, 3)).astype(np.float32), "k")
    conv = [helper.make_node("Conv", ["img", "k"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
            helper.make_node("ReduceMean", ["p"], ["y"], keepdims=0)]
    models["conv"] = helper.make_graph(conv, "conv", [img], [y], [k])
    one = helper.make_tensor_value_info("o", TensorProto.FLOAT, [2])
    then = helper.make_graph([helper.make_node("Neg", ["x1"], ["o"])], "then", [], [one])
    other = helper.make_graph([helper.make_node("Abs", ["x1"], ["o"])], "else", [], [one])
    x1 = helper.make_tensor_value_info("x1", TensorProto.FLOAT, [2])
    cond = helper.make_node("Constant", [], ["cond"], value=helper.make_tensor("c", TensorProto.BOOL, [], [1]))
    models["if"] = helper.make_graph([cond, helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)],
                                     "if", [x1], [y])
    body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("Add", ["v_in", "v_in"], ["v_out"])],
                             "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                                      helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                                      helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [2])],
                             [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [2])])
    trips = helper.make_node("Constant", [], ["m"], value=helper.make_tensor("m", TensorProto.INT64, [], [3]))
    models["loop"] = helper.make_graph([trips, cond, helper.make_node("Loop", ["m", "cond", "x1"], ["y"], body=body)],
                                       "loop", [x1], [y])
    for name, graph in models.items():
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        (out / f"{name}.onnx").write_bytes(model.SerializeToString())
    for name, graph in newer_onnx_graphs(rng).items():
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
        (out / f"{name}.onnx").write_bytes(model.SerializeToString())


def newer_onnx_graphs(rng) -> dict:
    """Element types and ops the importer reads since int64 / float64: packed
    int4 and float8 data, int64 past 2^31, doubles, a Scan body, an LSTM."""
    from onnx import TensorProto, helper, numpy_helper

    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    codes = helper.make_tensor_value_info("codes", TensorProto.FLOAT8E4M3FN, [4])
    q = helper.make_tensor("q", TensorProto.INT4, [5], [1, -2, 3, -8, 7])
    big = helper.make_tensor("big", TensorProto.INT64, [2], [2**40, -(2**33)])
    dbl = helper.make_tensor("dbl", TensorProto.DOUBLE, [2], [1.0 / 3, 1e-300])
    nodes = [helper.make_node("Cast", ["codes"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("DequantizeLinear", ["q", "scale"], ["dq"], axis=0),
             helper.make_node("Cast", ["big"], ["bf"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["dbl"], ["df"], to=TensorProto.FLOAT),
             helper.make_node("Concat", ["f", "dq", "bf", "df"], ["y"], axis=0)]
    scale = numpy_helper.from_array(np.array(0.5, np.float32), "scale")
    graphs = {"narrow_types": helper.make_graph(nodes, "narrow", [codes], [out], [q, big, dbl, scale])}
    step = helper.make_tensor_value_info("s", TensorProto.FLOAT, [2])
    body = helper.make_graph([helper.make_node("Add", ["acc", "s"], ["acc_out"]),
                              helper.make_node("Identity", ["acc_out"], ["scan_out"])], "body",
                             [helper.make_tensor_value_info("acc", TensorProto.FLOAT, [2]), step],
                             [helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [2]),
                              helper.make_tensor_value_info("scan_out", TensorProto.FLOAT, [2])])
    seq = helper.make_tensor_value_info("seq", TensorProto.FLOAT, [3, 2])
    init = numpy_helper.from_array(np.zeros(2, np.float32), "init")
    graphs["scan"] = helper.make_graph([helper.make_node("Scan", ["init", "seq"], ["last", "y"], num_scan_inputs=1, body=body)],
                                       "scan", [seq], [out], [init])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 1, 2])
    w = numpy_helper.from_array(rng.standard_normal((1, 12, 2)).astype(np.float32), "w")
    r = numpy_helper.from_array(rng.standard_normal((1, 12, 3)).astype(np.float32), "r")
    graphs["lstm"] = helper.make_graph([helper.make_node("LSTM", ["x", "w", "r"], ["y"], hidden_size=3)], "lstm", [x], [out], [w, r])
    return graphs


def main() -> None:
    (CORPUS / "safetensors").mkdir(parents=True, exist_ok=True)
    (CORPUS / "gguf").mkdir(parents=True, exist_ok=True)
    safetensors_seeds(CORPUS / "safetensors")
    onnx_seeds(CORPUS / "onnx")
    gguf_llama(CORPUS / "gguf" / "tiny_llama_mixed.gguf")
    gguf_llama(CORPUS / "gguf" / "tiny_qwen2_mixed.gguf", "qwen2")
    gguf_metadata(CORPUS / "gguf" / "metadata.gguf")
    for f in sorted(CORPUS.glob("*/*")):
        print(f"{f.relative_to(CORPUS)}: {f.stat().st_size} bytes")


if __name__ == "__main__":
    main()
