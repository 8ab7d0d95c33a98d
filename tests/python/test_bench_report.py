"""bench/run.py's report: a row whose output differs from PyTorch's is shown as wrong and listed, never
reported as a plain time (rendering only; nothing is timed here)."""
import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _bench_run():
    sys.path.insert(0, os.path.join(ROOT, "bench"))  # run.py's report imports its sibling modules
    spec = importlib.util.spec_from_file_location("bench_run", os.path.join(ROOT, "bench", "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _data(wrong):
    row = {"workload": "attention_s4096_plain", "impl": "lumen", "threads": 2, "median_ms": 93.0,
           "max_abs_error_vs_torch": 4.9e-3 if wrong else 7e-9, "wrong": wrong}
    torch_row = {"workload": "attention_s4096_plain", "impl": "torch", "threads": 2, "median_ms": 221.0,
                 "max_abs_error_vs_torch": 0.0, "wrong": False}
    return {"date": "today", "machine": {"cpu": "test cpu", "cores": 2, "features": "avx2"},
            "limits": {"2": {"fma_gflops": 100.0, "stream_triad_gbs": 10.0, "stream_triad_nt_gbs": 12.0,
                             "read_gbs": 20.0}},
            "workloads": [{"name": "attention_s4096_plain", "flops": 1e9, "bytes": 0}],
            "results": [row, torch_row], "parity": None}


def test_a_wrong_lumen_row_is_marked_and_listed():
    run = _bench_run()
    text = run.render(_data(wrong=True))
    assert "93.00 **WRONG**" in text
    assert "## Wrong results" in text
    assert "attention_s4096_plain (lumen, 2 threads): max abs error 0.0049" in text


def test_a_right_row_is_a_plain_time():
    run = _bench_run()
    text = run.render(_data(wrong=False))
    assert "**WRONG**" not in text
    assert "## Wrong results" not in text
    assert "| attention_s4096_plain | 93.00 |" in text


def test_the_kept_program_is_read_from_the_compile_report():
    run = _bench_run()
    report = ("graph search: measured\n"
              "    candidate 0 (original, cost 10, graph ab): 5 ms\n"
              "  * candidate 2 (extracted 2, cost 8, graph cd): 4 ms\n"
              "whole-program check: searched 3 ms, heuristic 4 ms (medians of interleaved runs): kept the searched "
              "schedules\n")
    assert run.winner_of(report) == "rewrite 2 (extracted 2), searched schedules"
    assert run.winner_of("graph search: skipped (search budget 0)\n") == "original graph, heuristic schedules"
    data = _data(wrong=False)
    data["results"][0]["winner"] = "original graph, heuristic schedules"
    assert "| 93.00 | 11% FMA | original graph, heuristic schedules |" in run.render(data)


def test_a_full_run_keeps_the_partial_runs_sections(tmp_path):
    run = _bench_run()
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nold full page\n")
    run.write_section(str(doc), "Attention (issue 16)", "# Benchmarks\n\nfirst\n## 2 threads\n| a |\n", ["--only", "x"])
    run.write_section(str(doc), "Decode (issue 19)", "# Benchmarks\n\nsecond\n", ["--only", "y"])
    kept = run.kept_sections(str(doc))
    assert "old full page" not in kept
    assert kept.index("<!-- section: Attention (issue 16) -->") < kept.index("<!-- section: Decode (issue 19) -->")
    assert "### 2 threads" in kept and "<!-- end section: Decode (issue 19) -->" in kept
    assert run.kept_sections(str(tmp_path / "missing.md")) == ""


def _fake_worker(run, progress, dies_on=(), cut_line_on=()):
    """A launch() that records each workload like a worker, and dies (exit code -11) on those in `dies_on`,
    the first time only (the second write of a cut line is what a crash mid-write leaves)."""
    calls = []

    def launch(left):
        calls.append(list(left))
        for name in left:
            if name in cut_line_on:
                with open(progress, "a") as f:
                    f.write('{"workload": "' + name + '", "rows": [{"wor')
                return -11, "Segmentation fault\n"
            if name in dies_on:
                return -11, "some output\nSegmentation fault\n"
            run.append_progress(progress, name, [{"workload": name, "impl": "lumen", "threads": 2, "median_ms": 1.0}])
        return 0, ""
    return launch, calls


def test_a_worker_that_dies_loses_only_its_workload(tmp_path):
    run = _bench_run()
    progress = str(tmp_path / "p.jsonl")
    run.start_progress(progress, {"threads": 2}, resume=False)
    launch, calls = _fake_worker(run, progress, dies_on={"b"}, cut_line_on={"d"})
    rows, died = run.run_workers(2, ["a", "b", "c", "d", "e"], ["lumen", "torch"], launch, progress)
    assert died == ["b", "d"]
    assert calls == [["a", "b", "c", "d", "e"], ["c", "d", "e"], ["e"]]
    assert [r["workload"] for r in rows] == ["a", "b", "b", "c", "d", "d", "e"]
    failed = [r for r in rows if "missing" in r]
    assert [(r["workload"], r["impl"]) for r in failed] == [("b", "lumen"), ("b", "torch"), ("d", "lumen"), ("d", "torch")]
    assert "died on this workload (exit code -11: Segmentation fault)" in failed[0]["missing"]


def test_resume_skips_finished_workloads_and_refuses_other_settings(tmp_path):
    run = _bench_run()
    progress = str(tmp_path / "p.jsonl")
    header = {"threads": 2, "runs": 10, "impls": ["lumen"], "workloads": ["a", "b"]}
    run.start_progress(progress, header, resume=False)
    run.append_progress(progress, "a", [{"workload": "a", "impl": "lumen", "threads": 2, "median_ms": 3.0}])
    run.start_progress(progress, header, resume=True)
    launch, calls = _fake_worker(run, progress)
    rows, died = run.run_workers(2, ["a", "b"], ["lumen"], launch, progress)
    assert calls == [["b"]] and died == []
    assert [(r["workload"], r["median_ms"]) for r in rows] == [("a", 3.0), ("b", 1.0)]
    with pytest.raises(SystemExit, match="other settings"):
        run.start_progress(progress, dict(header, runs=5), resume=True)
    run.start_progress(progress, header, resume=False)  # without --resume: starts over
    assert run.read_progress(progress) == (header, {})
