"""The Python API itself: numpy/DLPack in and out, dtypes, errors, programs."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import lumen
from harness import expect_error

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_error_is_a_python_exception_with_the_cpp_message():
    g = lumen.Graph()
    a, b = g.input("a", (3, 4)), g.input("b", (5, 2))
    with pytest.raises(lumen.Error, match=r"matmul: inner dims differ: a is \[3, 4\], b is \[5, 2\]"):
        a @ b
    assert issubclass(lumen.Error, ValueError)


def test_numpy_input_is_zero_copy_and_output_is_numpy():
    g = lumen.Graph()
    x = g.input("x", (4,))
    p = lumen.compile(g, [x * 2])
    data = np.arange(4, dtype=np.float32)
    p.set("x", data)
    data[0] = 100.0  # the program reads the caller's buffer: no copy was taken
    p.run()
    out = p.get("out0")
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    np.testing.assert_array_equal(out, [200, 2, 4, 6])


def test_non_contiguous_and_converting_inputs_are_copied_correctly():
    g = lumen.Graph()
    x = g.input("x", (3, 2))
    i = g.input("i", (3,), lumen.int32)
    p = lumen.compile(g, [x.sum(1), i * 2])
    base = np.arange(6, dtype=np.float64).reshape(2, 3)
    s, d = p(x=base.T, i=np.array([1, 2, 3], dtype=np.int64))  # float64 view, int64
    np.testing.assert_array_equal(s, [3, 5, 7])
    np.testing.assert_array_equal(d, [2, 4, 6])
    expect_error(lambda: p.set("i", np.array([1.5, 2, 3])), "does not fit")


def test_dlpack_torch_tensor_in_and_torch_from_numpy_out():
    g = lumen.Graph()
    x = g.input("x", (2, 3))
    p = lumen.compile(g, [x.exp()])
    t = torch.randn(2, 3)
    p.set("x", t)  # any DLPack producer
    p.run()
    out = torch.from_dlpack(p.get("out0"))
    torch.testing.assert_close(out, t.exp())


def test_half_precision_io():
    g = lumen.Graph()
    h = g.input("h", (3,), lumen.float16)
    b = g.input("b", (3,), lumen.bfloat16)
    p = lumen.compile(g, [h * 2, b * 2])
    out_h, out_b = p(h=np.array([1, 2, 3], np.float16), b=np.array([1.5, 2.5, 3.0], np.float32))
    assert out_h.dtype == np.float16 and out_b.dtype == np.float32  # numpy has no bfloat16
    np.testing.assert_array_equal(out_h, [2, 4, 6])
    np.testing.assert_array_equal(out_b, [3, 5, 6])


def test_dynamic_dims_by_name_bind_from_input_shapes():
    g = lumen.Graph()
    x = g.input("x", ("seq", 4))
    assert str(x.shape[0]) == "seq" and x.shape[1] == 4
    y = lumen.softmax(x, -1).sum(0)
    p = lumen.compile(g, [y])
    for n in (1, 5, 17):
        np.testing.assert_allclose(p(x=np.zeros((n, 4), np.float32)), np.full(4, n / 4), rtol=1e-6)
    expect_error(lambda: p(x=np.zeros((3, 5), np.float32)), "x", "[seq, 4]")


def test_named_outputs_and_program_introspection():
    g = lumen.Graph()
    x = g.input("x", (2,))
    g.mark_output(x + 1, "plus")
    g.mark_output(x * 3, "times")
    p = g.compile()
    assert p.output_names == ["plus", "times"] and p.input_names == ["x"] and p.backend == "cpu"
    p.set("x", np.array([1, 2], np.float32))
    p.run()
    np.testing.assert_array_equal(p.get("times"), [3, 6])
    expect_error(lambda: p.get("nope"), "no output named 'nope'")
    expect_error(lambda: p.set("y", np.zeros(2)), "no input named 'y'")


def test_unset_input_and_wrong_shape_errors():
    g = lumen.Graph()
    x = g.input("x", (2, 3))
    p = lumen.compile(g, [x * 2])
    expect_error(p.run, "input 'x'", "not set")
    expect_error(lambda: p.set("x", np.zeros((3, 2), np.float32)), "[2, 3]", "[3, 2]")


def test_graph_display_writes_an_svg(tmp_path):
    g = lumen.Graph()
    x = g.input("x", (2,))
    g.mark_output(lumen.exp(x), "y")
    path = g.display(str(tmp_path / "g.svg"))
    assert path.endswith(".svg") and "<svg" in open(path).read()
    assert "Exp2" in g.to_dot()


def test_readme_python_snippet_runs_and_matches_torch():
    readme = open(os.path.join(ROOT, "README.md")).read()
    start = readme.index("```python\n") + len("```python\n")
    code = readme[start:readme.index("```", start)]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "max abs difference vs torch" in out.stdout
    diff = float(out.stdout.strip().split()[-1])
    assert diff < 1e-5


def test_state_is_appended_across_runs_with_symbolic_slices(backend):
    g = lumen.Graph()
    past = g.dim("past")
    cache = g.state("cache", [6, 2])
    x = g.input("x", ["seq", 2])
    g.assign(cache[past:past + x.shape[0]], x * 3)
    g.mark_output(cache[:past].sum(0), "before")
    p = lumen.compile(g, backend=backend)
    expected = np.zeros((6, 2), np.float32)
    at = 0
    for rows in (2, 1, 3):
        x_np = np.arange(at * 2, (at + rows) * 2, dtype=np.float32).reshape(rows, 2) + 1
        p.set("x", x_np)
        p.bind("past", at)
        p.run()
        np.testing.assert_allclose(p.get("before"), expected[:at].sum(0))
        expected[at:at + rows] = 3 * x_np
        at += rows
        np.testing.assert_array_equal(p.state("cache"), expected)
    assert p.state_names == ["cache"]
    p.reset_state()
    assert not p.state("cache").any()
    p.bind("past", 5)
    with pytest.raises(lumen.Error, match="slice"):
        p.run()  # 5 + 3 rows exceed the capacity of 6


def test_parameters_are_reread_after_set(backend):
    # A matmul against a parameter: the compiled program may keep packed
    # panels of it between runs, and must redo them when it is set again.
    rng = np.random.default_rng(3)
    g = lumen.Graph()
    x = g.input("x", [8, 32])
    w = g.parameter("w", [64, 32])
    p = lumen.compile(g, [lumen.nn.functional.linear(x, w)], backend=backend)
    x_np = rng.standard_normal((8, 32)).astype(np.float32)
    for _ in range(2):
        w_np = rng.standard_normal((64, 32)).astype(np.float32)
        p.set("x", x_np)
        p.set("w", w_np)
        for _ in range(2):
            p.run()
            np.testing.assert_allclose(p.get("out0"), x_np @ w_np.T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(2**31, 2**31), (2**62,), (2**40, 2**20, 4)])
def test_shapes_too_large_to_lay_out_are_refused_when_built(shape):
    g = lumen.Graph()
    with pytest.raises(lumen.Error, match=r"more bytes than lumen can lay out"):
        g.input("x", shape)
    with pytest.raises(lumen.Error, match=r"more bytes than lumen can lay out"):
        lumen.compile(g, [g.full(shape, 1.0)]).run()  # a broadcast constant: refused at the latest when laid out


def test_a_dynamic_dim_bound_too_large_is_refused_when_run():
    g = lumen.Graph()
    n = g.dim("n")
    x = g.input("x", (1, 1))
    y = x.expand((n, n)) * 2.0  # an n x n output: 2^62 bytes for n = 2^30
    p = lumen.compile(g, [y])
    p.set("x", np.ones((1, 1), np.float32))
    p.bind("n", 2**30)
    with pytest.raises(lumen.Error, match=r"more bytes than lumen can lay out"):
        p.run()
    p.bind("n", 3)  # the program still works afterwards
    p.run()
    np.testing.assert_array_equal(p.get("out0"), np.full((3, 3), 2.0))
