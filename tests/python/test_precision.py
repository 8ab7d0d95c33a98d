"""lumen.compile(..., precision="bf16"|"fp16"): contractions take rounded
operands and accumulate in fp32 (lumen/passes/precision.h). Checked against
PyTorch: tightly against the same rounding computed in fp32
(x.bfloat16().float() @ w.bfloat16().float()), within bf16's output rounding
against torch's bf16 matmul (fp32 accumulation, a bf16 result), and within a
stated tolerance against fp32. On a CPU with AVX512-BF16 the matmul kernels
take the vdpbf16ps path; with it hidden (LUMEN_ISA=avx512) they fall back and
the report says so."""
import os
import subprocess
import sys

import numpy as np
import pytest

import lumen

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _inputs(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _run(build, arrays, precision, backend="cpu"):
    g = lumen.Graph()
    ts = [g.input(f"x{i}", a.shape) for i, a in enumerate(arrays)]
    out = build(*ts)
    p = lumen.compile(g, [out], backend=backend, precision=precision, tuning_cache=False)
    for i, a in enumerate(arrays):
        p.set(f"x{i}", a)
    p.run()
    return np.asarray(p.get("out0")), p.report()


@pytest.mark.parametrize("target", ["cpu", "interp"])
@pytest.mark.parametrize("m,k,n", [(1, 64, 32), (7, 33, 48), (50, 96, 64), (33, 1000, 16)])
def test_bf16_matmul_matches_torch(target, m, k, n):
    x, w = _inputs((m, k), (k, n))
    got, report = _run(lambda a, b: a @ b, [x, w], "bf16", target)
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    same_rounding = (tx.bfloat16().float() @ tw.bfloat16().float()).numpy()
    torch_bf16 = torch.matmul(tx.bfloat16(), tw.bfloat16()).float().numpy()
    fp32 = (tx @ tw).numpy()
    scale = np.abs(fp32).max()
    # The same rounded operands summed in fp32: only the order of the sums differs.
    np.testing.assert_allclose(got, same_rounding, rtol=1e-5, atol=1e-5 * scale)
    # torch rounds its result to bf16 (8 significant bits): half an ulp of bf16.
    np.testing.assert_allclose(got, torch_bf16, rtol=2 ** -8, atol=2 ** -8 * scale)
    # Against fp32: bf16 operands lose ~3 significant digits.
    assert np.abs(got - fp32).max() <= 2e-2 * scale
    assert np.abs(got - fp32).max() > 1e-6 * scale  # the operands were rounded
    if target == "cpu":
        assert "precision bf16: 1 contraction" in report


def test_fp16_rounds_to_half():
    x, w = _inputs((9, 40), (40, 16), seed=1)
    got, report = _run(lambda a, b: a @ b, [x, w], "fp16")
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    want = (tx.half().float() @ tw.half().float()).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    assert "precision fp16" in report


def _block(x, wq, wk, wv, wo):
    """rms_norm -> attention over the rows -> output projection -> residual add."""
    import lumen.nn.functional as F
    h = F.rms_norm(x, (64,), eps=1e-6)
    q, k, v = h @ wq, h @ wk, h @ wv
    scores = (q @ k.transpose(-1, -2)) * (1.0 / 4.0)
    return x + lumen.softmax(scores, -1) @ v @ wo


def _block_torch(x, wq, wk, wv, wo, dtype):
    h = torch.nn.functional.rms_norm(x, (x.shape[-1],), eps=1e-6)

    def mm(a, b):  # fp32 accumulation of operands rounded to dtype
        return a.to(dtype).float() @ b.to(dtype).float()
    q, k, v = mm(h, wq), mm(h, wk), mm(h, wv)
    scores = mm(q, k.transpose(-1, -2)) * 0.25
    return x + mm(mm(torch.softmax(scores, -1), v), wo)


def test_bf16_block_matches_torch_with_the_same_rounding_and_fp32_within_tolerance():
    arrays = _inputs((24, 64), (64, 64), (64, 64), (64, 64), (64, 64), seed=2)
    arrays[1:] = [a * 0.125 for a in arrays[1:]]
    got, report = _run(_block, arrays, "bf16")
    ts = [torch.from_numpy(a) for a in arrays]
    want = _block_torch(*ts, torch.bfloat16).numpy()
    fp32 = _block_torch(*ts, torch.float32).numpy()
    # Norm, softmax and the residual stay fp32: lumen and torch round the same operands.
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # The stated tolerance of bf16 against fp32 for this block.
    assert np.abs(got - fp32).max() <= 5e-2 * np.abs(fp32).max()
    assert "precision bf16: 6 contractions" in report


def test_unknown_precision_is_an_error():
    g = lumen.Graph()
    x = g.input("x", (2, 2))
    with pytest.raises(lumen.Error, match=r"unknown precision 'int8' \(available: fp32, bf16, fp16\)"):
        lumen.compile(g, [x @ x], precision="int8")


_FALLBACK = """
import numpy as np, lumen
g = lumen.Graph()
a, b = g.input("a", (32, 64)), g.input("b", (64, 64))
p = lumen.compile(g, [a @ b], precision="bf16", tuning_cache=False)
x, y = np.ones((32, 64), np.float32), np.full((64, 64), 0.5, np.float32)
p.set("a", x); p.set("b", y); p.run()
print(lumen.cpu_info()["features"])
print(p.report())
print("value", float(np.asarray(p.get("out0"))[3, 5]))
"""


@pytest.mark.parametrize("isa", ["native", "avx512"])
def test_report_says_which_path_and_the_fallback_computes_the_same(isa):
    env = dict(os.environ)
    env.pop("LUMEN_ISA", None)
    if isa != "native":
        env["LUMEN_ISA"] = isa
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    out = subprocess.run([sys.executable, "-c", _FALLBACK], env=env, capture_output=True, text=True, check=True).stdout
    features = out.splitlines()[0]
    if isa == "avx512":
        assert "avx512_bf16" not in features
    if "avx512f" not in features:
        pytest.skip("no AVX-512 on this CPU")
    if "avx512_bf16" in features:
        assert "1 of 1 kernels on the bf16 pair dot path" in out, out
    else:
        assert "f32 FMA fallback (this CPU has no avx512_bf16, or LUMEN_ISA hides it)" in out, out
    assert "value 32.0" in out  # 64 products of 1 * 0.5, exact in either path


def test_cli_takes_precision():
    exe = os.path.join(ROOT, "build", "tools", "lumen")
    if not os.path.exists(exe):
        pytest.skip("the lumen CLI is not built")
    out = subprocess.run([exe, "run", "--help"], capture_output=True, text=True).stdout
    assert "--precision" in out
    bad = subprocess.run([exe, "run", "x.onnx", "--precision", "int4"], capture_output=True, text=True)
    assert bad.returncode != 0 and "int4" in bad.stdout + bad.stderr


def test_llama_bf16_logits_within_tolerance_of_fp32_and_greedy_tokens_agree(tmp_path):
    """A random Llama (tests/python/test_llama.py's, 2 layers): bf16 logits against fp32 (lumen's and Hugging
    Face's) within 3% of the largest logit, and 32 greedy tokens the same."""
    pytest.importorskip("transformers")
    from test_llama import hf_logits, make_model
    model, path = make_model(tmp_path)
    prompt = [1, 5, 9, 2, 7, 3]
    runs = {p: lumen.models.Llama(path, capacity=64, precision=p, tuning_cache=False) for p in ("fp32", "bf16")}
    logits = {p: np.asarray(r.forward_all(prompt))[0] for p, r in runs.items()}
    hf = hf_logits(model, prompt)
    scale = np.abs(hf).max()
    np.testing.assert_allclose(logits["fp32"], hf, atol=1e-4 * scale, rtol=1e-4)
    bf16_error = np.abs(logits["bf16"] - hf).max()
    assert bf16_error <= 3e-2 * scale, bf16_error / scale
    assert bf16_error > 1e-6 * scale  # the bf16 program rounds
    tokens = {p: r.generate(prompt, max_new_tokens=32)[0] for p, r in runs.items()}
    assert len(tokens["fp32"]) == 32
    assert tokens["bf16"] == tokens["fp32"]


@pytest.mark.parametrize("rows", [1, 5])
def test_bf16_linear_with_a_kept_weight_pack_follows_set(rows):
    """x @ w.T with w a parameter: on a CPU with AVX512-BF16 its bf16 pair panels are packed once and kept
    between runs (decode steps stream half the bytes); setting w again repacks."""
    import lumen.nn.functional as F
    g = lumen.Graph()
    x = g.input("x", (rows, 96))
    w = g.parameter("w", (64, 96))
    p = lumen.compile(g, [F.linear(x, w)], precision="bf16", tuning_cache=False)
    xs = _inputs((rows, 96), (rows, 96), seed=3)
    ws = _inputs((64, 96), (64, 96), seed=4)

    def want(xv, wv):
        return (torch.from_numpy(xv).bfloat16().float() @ torch.from_numpy(wv).bfloat16().float().T).numpy()
    for xv, wv in [(xs[0], ws[0]), (xs[1], ws[0]), (xs[1], ws[1])]:
        p.set("x", xv)
        p.set("w", wv)
        p.run()
        np.testing.assert_allclose(np.asarray(p.get("out0")), want(xv, wv), rtol=1e-5, atol=1e-4)
    if lumen.cpu_info()["avx512_bf16"]:
        assert "1 of 1 kernels on the bf16 pair dot path" in p.report(), p.report()
        assert p.stats["kept_pack_bytes"] == 64 * 96 * 2  # w's bf16 pairs, kept outside the arena
