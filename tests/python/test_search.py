"""The schedule search as Python sees it: the per-kernel trace of best time
over search time, and its picture (lumen.plot.search_progress)."""
import pytest

import lumen


def matmul_graph():
    g = lumen.Graph()
    a, b = g.input("a", (64, 96)), g.input("b", (96, 128))
    return g, a @ b


def test_search_trace_is_best_so_far_over_time_and_plots(tmp_path):
    g, y = matmul_graph()
    program = lumen.compile(g, [y], budget_s=2.0, tuning_cache=False)
    traces = program.search_trace
    assert len(traces) == 1 and "SumReduce" in traces[0]["kernel"]
    progress = traces[0]["progress"]
    assert len(progress) >= 2  # the heuristic, then at least one candidate
    seconds = [t for t, _ in progress]
    best = [ms for _, ms in progress]
    assert seconds == sorted(seconds) and seconds[-1] <= 10
    assert all(later <= earlier for earlier, later in zip(best, best[1:])) and best[-1] > 0
    # the winner, re-measured beside the heuristic, is never slower than it
    assert 0 < traces[0]["best_ms"] <= traces[0]["baseline_ms"]
    path = lumen.plot.search_progress(program, str(tmp_path / "search.png"))
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_no_search_no_trace_and_a_clear_error(tmp_path):
    g, y = matmul_graph()
    program = lumen.compile(g, [y], budget_s=0.0, tuning_cache=False)
    assert program.search_trace == []
    with pytest.raises(lumen.Error, match="searched no kernel"):
        lumen.plot.search_progress(program, str(tmp_path / "none.png"))
    assert not (tmp_path / "none.png").exists()
