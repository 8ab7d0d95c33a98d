"""Generation as Hugging Face does it (random weights, nothing downloaded):
eos_token_id lists (Llama-3.1 style, config.json and generation_config.json)
stop at any of their tokens; a full KV cache is a stop reason and a warning,
not a silent short answer; each generate() starts a fresh sequence unless
continue_=True. The command line prints the text, a newline, and its
statistics on stderr; unexpected C++ exceptions become clear errors."""
import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import lumen

transformers = pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")

from lumen.gguf_export import export_llama  # noqa: E402
from test_llama import make_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "build" / "tools" / "lumen"
PROMPT = [1, 2, 3, 4]


def hf_generate(model, prompt, n, eos=None):
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=n, do_sample=False, eos_token_id=eos,
                             pad_token_id=0)
    return out[0, len(prompt):].tolist()


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    model, path = make_model(tmp_path_factory.mktemp("gen"))
    return model, path


def write_json(path, **changes):
    config = json.loads(path.read_text()) if path.exists() else {}
    config.update(changes)
    path.write_text(json.dumps(config))


@pytest.mark.parametrize("where", ["config.json", "generation_config.json"])
def test_eos_token_id_list_stops_at_any_of_them(llama, where):
    model, path = llama
    free = hf_generate(model, PROMPT, 12)
    stop = free[5]
    eos = [95 if stop != 95 else 94, stop]  # the second entry of the list is the one generated
    want = free[:free.index(stop) + 1]
    assert want == hf_generate(model, PROMPT, 12, eos=eos)
    d = Path(path)
    (d / "generation_config.json").unlink(missing_ok=True)
    write_json(d / "config.json", eos_token_id=eos if where == "config.json" else 0)
    if where == "generation_config.json":
        write_json(d / "generation_config.json", eos_token_id=eos)  # overrides config.json's, as in transformers
    runner = lumen.models.Llama(path, capacity=64)
    assert runner.eos_tokens == eos
    got, stats = runner.generate(PROMPT, max_new_tokens=12)
    assert got == want and stats["stop_reason"] == "eos" and stats["generated_tokens"] == len(want)
    write_json(d / "config.json", eos_token_id=None)
    (d / "generation_config.json").unlink(missing_ok=True)


def test_gguf_eos_and_eot_both_stop(llama, tmp_path):
    model, path = llama
    free = hf_generate(model, PROMPT, 12)
    f = export_llama(path, tmp_path / "m.gguf", "f32")
    reader = gguf.GGUFReader(str(f))
    w = gguf.GGUFWriter(str(tmp_path / "eot.gguf"), "llama")
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name in ("general.architecture", "tokenizer.ggml.eos_token_id"):
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_key_value(field.name, field.contents(), vtype, sub_type=field.types[-1])
        else:
            w.add_key_value(field.name, field.contents(), vtype)
    w.add_eos_token_id(95 if free[4] != 95 else 94)
    w.add_eot_token_id(free[4])  # llama.cpp ends generation at end-of-turn tokens too
    for t in reader.tensors:
        w.add_tensor(t.name, np.array(t.data).reshape([int(d) for d in reversed(t.shape)]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    runner = lumen.models.Llama(str(tmp_path / "eot.gguf"), capacity=64)
    got, stats = runner.generate(PROMPT, max_new_tokens=12)
    assert got == free[:free.index(free[4]) + 1] and stats["stop_reason"] == "eos"


def test_each_generate_starts_a_fresh_sequence_unless_continued(llama):
    model, path = llama
    runner = lumen.models.Llama(path, capacity=64)
    other = [7, 8, 9]
    first, stats = runner.generate(PROMPT, max_new_tokens=5)
    assert first == hf_generate(model, PROMPT, 5) and stats["stop_reason"] == "length"
    second, _ = runner.generate(other, max_new_tokens=5)  # not a continuation of the first
    assert second == hf_generate(model, other, 5)
    assert runner.position == len(other) + 4  # the last sampled token is not fed yet
    # continue_: the previous answer (its last token included) and the new prompt extend the sequence
    more, _ = runner.generate([11, 12], max_new_tokens=4, continue_=True)
    assert more == hf_generate(model, other + second + [11, 12], 4)
    assert runner.position == len(other) + 5 + 2 + 3


def test_a_full_kv_cache_is_a_stop_reason_and_a_warning(llama):
    model, path = llama
    runner = lumen.models.Llama(path, capacity=10)
    with pytest.warns(RuntimeWarning, match=r"KV cache is full \(capacity 10 positions\): 7 of 20 tokens"):
        got, stats = runner.generate(PROMPT, max_new_tokens=20)
    assert stats["stop_reason"] == "context_full" and len(got) == 7 == stats["generated_tokens"]
    assert got == hf_generate(model, PROMPT, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, stats = runner.generate(PROMPT, max_new_tokens=6)
    assert stats["stop_reason"] == "length"


# --- the command line ---

needs_cli = pytest.mark.skipif(not CLI.exists(), reason="the lumen executable is built by cmake (build/tools/lumen)")


def run_cli(*args):
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=300)


@needs_cli
def test_cli_generate_prints_text_then_statistics_on_stderr_and_says_when_the_cache_is_full(llama):
    model, path = llama
    r = run_cli("generate", "-m", path, "--tokens", "1,2,3,4", "-n", "5", "--no-tuning-cache")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ",".join(map(str, hf_generate(model, PROMPT, 5))) + "\n"  # no tokenizer: ids
    assert "prefill: 4 tokens" in r.stderr and "stop: length" in r.stderr and "prefill" not in r.stdout
    r = run_cli("generate", "-m", path, "--tokens", "1,2,3,4", "-n", "20", "--capacity", "10", "--no-tuning-cache")
    assert r.returncode == 1
    assert r.stdout.count(",") == 6 and r.stdout.endswith("\n")
    assert "stop: context_full" in r.stderr and "KV cache is full (capacity 10 positions): 7 of 20 tokens" in r.stderr


@needs_cli
def test_cli_show_search_prints_what_compiling_searched(llama, tmp_path):
    _, path = llama
    r = run_cli("show", "-m", path, "--format", "dot", "-o", str(tmp_path / "s"), "--search", "--budget", "2",
                "--no-tuning-cache")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "s_kernels.dot").exists() and "digraph" in (tmp_path / "s_kernels.dot").read_text()
    assert "search:" in r.stdout and "kernels (" in r.stdout  # the schedule search's account follows the pictures
    r = run_cli("show", "-m", path, "--format", "dot", "-o", str(tmp_path / "t"), "--no-tuning-cache")
    assert r.returncode == 0 and "search:" not in r.stdout


def gguf_with_bad_flag(path, out):
    f = export_llama(path, Path(out).with_suffix(".base.gguf"), "f32")
    reader = gguf.GGUFReader(str(f))
    w = gguf.GGUFWriter(str(out), "llama")
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name == "general.architecture":
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_key_value(field.name, field.contents(), vtype, sub_type=field.types[-1])
        else:
            w.add_key_value(field.name, field.contents(), vtype)
    w.add_key_value("tokenizer.ggml.add_bos_token", 1, gguf.GGUFValueType.UINT8)  # a flag of the wrong type
    for t in reader.tensors:
        w.add_tensor(t.name, np.array(t.data).reshape([int(d) for d in reversed(t.shape)]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(out)


def test_cpp_std_exceptions_become_lumen_errors(llama, tmp_path):
    _, path = llama
    bad = gguf_with_bad_flag(path, tmp_path / "flag.gguf")
    with pytest.raises(lumen.Error, match="add_bos_token|bad_variant_access"):
        lumen.Tokenizer.from_gguf(bad)
    if CLI.exists():  # the command line: a message and exit code 1, never an abort
        r = run_cli("generate", "-m", bad, "-p", "hello", "-n", "2", "--no-tuning-cache")
        assert r.returncode == 1 and r.stderr.startswith("lumen: ")
        assert "bad_variant_access" in r.stderr or "add_bos_token" in r.stderr


def test_python_errors_raised_inside_cpp_keep_their_type(llama):
    # the translator passes a pending Python error through: a warning turned into an error stays a RuntimeWarning
    _, path = llama
    runner = lumen.models.Llama(path, capacity=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="KV cache is full"):
            runner.generate(PROMPT, max_new_tokens=5)
    with pytest.raises(TypeError):  # and nanobind's own argument errors
        lumen.models.Llama(123)


# --- the console script ---

@needs_cli
def test_console_entry_point_runs_the_cli():
    r = subprocess.run([sys.executable, "-m", "lumen._cli", "--help"], capture_output=True, text=True, timeout=60,
                       cwd=ROOT, env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    for sub in ["generate", "embed", "bench", "tune", "show", "cache"]:
        assert f"\n  {sub} " in r.stdout
    assert r.stdout.startswith("lumen: a deep learning compiler") and "Usage: lumen " in r.stdout
    from lumen import _cli
    assert _cli.executable().samefile(CLI) and _cli.main(["cache", "--no-such-flag"]) != 0
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'lumen = "lumen._cli:main"' in pyproject
