"""`lumen train TEXT`: a character-level GPT trained from the command line on a text file shipped in the repo
(docs/semantics.md): progress lines, a loss that falls, validation loss, checkpoints that resume where they
stopped, clear errors for a truncated checkpoint and a text too short for the context, and samples."""
import math
import os
import re
import subprocess

import pytest
from safetensors.numpy import load_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.path.join(ROOT, "build", "tools", "lumen")
TEXT = os.path.join(ROOT, "docs", "semantics.md")
SMALL = {"--layers": "1", "--dim": "32", "--heads": "2", "--context": "16", "--batch": "8", "--lr": "3e-3",
         "--eval-batches": "2", "--seed": "3"}


def train(*args):
    """The small model with `args` (flag, value pairs) added or replacing its defaults."""
    assert os.path.exists(CLI), "make test builds the lumen CLI (build/tools/lumen)"
    options = dict(SMALL, **dict(zip(args[::2], args[1::2])))
    flat = [x for kv in options.items() for x in kv]
    # Samples are bytes of a byte-level model: not always UTF-8.
    return subprocess.run([CLI, "train", TEXT, *flat], capture_output=True, text=True, errors="replace", timeout=600)


def progress(stdout):
    return [(int(m[1]), float(m[2])) for m in re.finditer(r"^step (\d+)/\d+  loss ([0-9.]+)  lr \S+  [0-9.]+ steps/s  "
                                                          r"\d+ tokens/s$", stdout, re.M)]


def test_trains_logs_saves_resumes_and_samples(tmp_path):
    ckpt = str(tmp_path / "gpt.safetensors")
    first = train("--steps", "40", "--log-every", "10", "--save", ckpt)
    assert first.returncode == 0, first.stderr
    vocab = int(re.search(r"vocabulary of (\d+)", first.stdout)[1])
    lines = progress(first.stdout)
    assert [s for s, _ in lines] == [10, 20, 30, 40]
    # From uniform guessing (ln vocab) to well below it.
    assert lines[-1][1] < math.log(vocab) - 1.0, first.stdout
    assert re.search(r"validation loss [0-9.]+", first.stdout)
    saved = load_file(ckpt)
    assert saved["wte.weight"].shape == (vocab, 32) and "wte.weight.exp_avg" in saved, sorted(saved)

    resumed = train("--steps", "50", "--log-every", "5", "--resume", ckpt, "--sample", "40")
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed from" in resumed.stdout and "at step 40" in resumed.stdout
    assert [s for s, _ in progress(resumed.stdout)] == [45, 50]
    sample = re.search(r"\n---\n(.*)\n---\n", resumed.stdout, re.S)
    assert sample and sample[1]


def test_truncated_checkpoint_and_short_text_are_clear_errors(tmp_path):
    ckpt = tmp_path / "gpt.safetensors"
    assert train("--steps", "2", "--save", str(ckpt)).returncode == 0
    data = ckpt.read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(data[: len(data) // 2])
    cut = train("--steps", "4", "--resume", str(tmp_path / "cut.safetensors"))
    assert cut.returncode == 1 and "truncated" in cut.stderr, cut.stderr
    short = train("--context", "9000")
    assert short.returncode == 1 and "too few for a context of 9000" in short.stderr, short.stderr
    other = train("--dim", "64", "--resume", str(ckpt))
    assert other.returncode == 1 and "wte.weight" in other.stderr, other.stderr
