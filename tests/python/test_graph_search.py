"""The graph-level search as Python sees it: with a budget, program.report()
lists the rules that fired, the candidates with their times and the winner;
the chosen program matches PyTorch; a warm compile measures nothing; budget 0
skips the stage."""
import numpy as np
import torch
import torch.nn.functional as TF

import lumen
import lumen.nn.functional as F


def attention_graph():
    g = lumen.Graph()
    q, k, v = (g.input(name, (1, 2, 24, 8)) for name in ("q", "k", "v"))
    return g, F.scaled_dot_product_attention(q, k, v)


def run(program, values):
    for name, a in values.items():
        program.set(name, a)
    program.run()
    return np.asarray(program.get("out0"))


def test_report_lists_rules_candidates_times_and_winner(tmp_path):
    g, y = attention_graph()
    rng = np.random.default_rng(0)
    values = {n: rng.standard_normal((1, 2, 24, 8)).astype(np.float32) for n in ("q", "k", "v")}
    want = TF.scaled_dot_product_attention(*(torch.from_numpy(values[n]) for n in ("q", "k", "v"))).numpy()
    cache = str(tmp_path / "tuning.db")
    cold = lumen.compile(g, [y], budget_s=0.2, cache_path=cache)
    report = cold.report()
    assert "graph search: measured" in report
    assert "rules fired:" in report and "sum-factor-out" in report
    assert "* candidate" in report and " ms\n" in report
    np.testing.assert_allclose(run(cold, values), want, rtol=1e-4, atol=1e-5)
    warm = lumen.compile(g, [y], budget_s=0.2, cache_path=cache)
    assert "choice from the tuning cache (nothing measured)" in warm.report()
    assert warm.stats["search_timing_runs"] == 0
    np.testing.assert_allclose(run(warm, values), want, rtol=1e-4, atol=1e-5)


def test_budget_zero_skips_the_stage():
    g, y = attention_graph()
    program = lumen.compile(g, [y], budget_s=0.0, tuning_cache=False)
    assert "graph search" not in program.report()
    assert "graph_candidates" not in program.stats
