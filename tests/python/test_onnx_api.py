"""lumen.onnx.load / load_bytes from Python and `lumen run model.onnx`."""
import os
import subprocess

import numpy as np
import pytest

import lumen

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _gemm_model(path=None):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"], alpha=0.5),
             helper.make_node("Tanh", ["g"], ["y"])]
    graph = helper.make_graph(nodes, "gemm", [x], [y], [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    if path:
        onnx.save(model, str(path))
    return model, w, b


def test_load_compile_and_run_with_a_dynamic_batch(backend, tmp_path):
    _, w, b = _gemm_model(tmp_path / "gemm.onnx")
    model = lumen.onnx.load(str(tmp_path / "gemm.onnx"))
    assert model.inputs == ["x"] and model.outputs == ["y"] and model.opset == 18
    program = model.compile(backend=backend)
    for batch in (1, 7):  # one compiled program, two batch sizes
        x = np.random.default_rng(batch).standard_normal((batch, 4)).astype(np.float32)
        np.testing.assert_allclose(program(x=x), np.tanh(0.5 * (x @ w) + b), rtol=1e-5, atol=1e-5)


def test_truncated_model_is_a_lumen_error():
    data = _gemm_model()[0].SerializeToString()
    for cut in (1, len(data) // 3, len(data) - 2):
        with pytest.raises(lumen.Error, match="onnx"):
            lumen.onnx.load_bytes(data[:cut])


def test_unsupported_op_names_node_and_type():
    model, _, _ = _gemm_model()
    model.graph.node.append(helper.make_node("Unique", ["y"], ["u"], name="dedupe"))
    with pytest.raises(lumen.Error, match=r"node 'dedupe' \(Unique\)"):
        lumen.onnx.load_bytes(model.SerializeToString())


def test_cli_run_prints_output_shapes_and_time(tmp_path):
    cli = os.path.join(ROOT, "build", "tools", "lumen")
    if not os.path.exists(cli):
        pytest.skip("the lumen CLI is not built (build/tools/lumen)")
    _gemm_model(tmp_path / "gemm.onnx")
    np.save(tmp_path / "x.npy", np.ones((5, 4), np.float32))
    out = subprocess.run([cli, "run", str(tmp_path / "gemm.onnx"), "--input", f"x={tmp_path / 'x.npy'}", "--runs", "2"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "y: [5, 3] f32" in out.stdout and "run " in out.stdout
    bad = subprocess.run([cli, "run", str(tmp_path / "gemm.onnx"), "--input", f"z={tmp_path / 'x.npy'}"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "no input 'z'" in bad.stderr


def _single_node_model(op, inputs, output, **attrs):
    """A one-node model: inputs [(name, TensorProto type, dims)], output (name, type, dims)."""
    node = helper.make_node(op, [i[0] for i in inputs], [output[0]], **attrs)
    graph = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*output)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]).SerializeToString()


def test_int64_and_float64_stay_exact(backend):
    """int64 is lumen's I64 and double its F64 end to end: values past 2^31
    (and past 2^53) come back exactly, doubles keep their precision."""
    ints = np.array([2**40, -(2**53) - 1, 5, 2**62], np.int64)
    program = lumen.onnx.load_bytes(_single_node_model(
        "Add", [("a", TensorProto.INT64, [4]), ("b", TensorProto.INT64, [4])], ("y", TensorProto.INT64, [4]))).compile(backend=backend)
    out = program(a=ints, b=np.array([1, 1, -7, 3], np.int64))
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, ints + np.array([1, 1, -7, 3]))
    program = lumen.onnx.load_bytes(_single_node_model(
        "Div", [("a", TensorProto.DOUBLE, [3]), ("b", TensorProto.DOUBLE, [3])], ("y", TensorProto.DOUBLE, [3]))).compile(backend=backend)
    a, b = np.array([1.0, 2.0, 1e-300]), np.array([3.0, 7.0, 3.0])
    out = program(a=a, b=b)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, a / b, rtol=1e-15, atol=0)


def test_fixed_int64_input_is_not_narrowed(backend):
    """A graph input fixed at import (a shape, an offset) keeps its int64 value."""
    data = _single_node_model("Add", [("x", TensorProto.INT64, [2]), ("k", TensorProto.INT64, [1])],
                              ("y", TensorProto.INT64, [2]))
    model = lumen.onnx.load_bytes(data, fixed_inputs={"k": np.array([2**40 + 3], np.int64)})
    assert model.inputs == ["x"]
    out = model.compile(backend=backend)(x=np.array([1, -(2**40)], np.int64))
    np.testing.assert_array_equal(out, [2**40 + 4, 3])


@pytest.mark.parametrize("op,fn", [("Atan", np.arctan), ("Asin", np.arcsin), ("Acos", np.arccos)])
def test_inverse_trigonometry_matches_numpy(op, fn, backend):
    """Atan / Asin / Acos are compositions (range reduction and a series):
    checked densely, at the ends of the domain and outside it."""
    x = np.concatenate([np.linspace(-1, 1, 2001), [-1.0, 1.0, -0.9999999, 0.9999999, 0.0, 0.26794, 0.26795]])
    if op == "Atan":
        x = np.concatenate([x, [-1e30, -1e4, -3.7, 1.0001, 12.5, 1e6, np.inf, -np.inf]])
    else:
        x = np.concatenate([x, [1.5, -2.0]])  # outside [-1, 1]: NaN
    x = x.astype(np.float32)
    program = lumen.onnx.load_bytes(_single_node_model(op, [("x", TensorProto.FLOAT, [len(x)])],
                                                       ("y", TensorProto.FLOAT, [len(x)]))).compile(backend=backend)
    with np.errstate(invalid="ignore"):
        want = fn(x.astype(np.float64))
    np.testing.assert_allclose(program(x=x), want, rtol=2e-6, atol=2e-7, equal_nan=True)
