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
