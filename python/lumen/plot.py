"""A picture of a compile's schedule search: best speed-up over the heuristic
schedule against search time, one line per searched kernel, and a dot for the
final re-measurement of the finalists side by side (what decided the winner).

    program = lumen.compile(g, [y], budget_s=20)
    lumen.plot.search_progress(program, "search.png")
"""
from ._lumen import Error


def search_progress(program, path, top=12):
    """Writes a PNG (or any format matplotlib knows by the extension) to `path`.

    Shows the `top` kernels with the largest final speed-ups; returns the path.
    Raises lumen.Error if the program searched no kernel.
    """
    traces = program.search_trace
    if not traces:
        raise Error("plot.search_progress: the program searched no kernel (compile with budget_s > 0 and "
                    "tuning_cache=False, or with an empty tuning cache)")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - scripts/setup installs it
        raise Error(f"plot.search_progress needs matplotlib ({e}); run scripts/setup") from e

    def speedups(trace):
        base = trace["progress"][0][1]
        return [t for t, _ in trace["progress"]], [base / ms for _, ms in trace["progress"]]

    def final(trace):  # the finalists re-measured side by side decide the winner
        return trace["baseline_ms"] / trace["best_ms"]

    ranked = sorted(traces, key=final, reverse=True)[:top]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for trace in ranked:
        xs, ys = speedups(trace)
        label = trace["kernel"] if len(trace["kernel"]) <= 40 else trace["kernel"][:37] + "..."
        line, = ax.step(xs, ys, where="post", label=f"{label} (x{final(trace):.2f} re-measured)")
        ax.plot([xs[-1]], [final(trace)], "o", color=line.get_color())
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xlabel("seconds into the kernel's search")
    ax.set_ylabel("best speed-up over the heuristic schedule")
    ax.set_title(f"lumen schedule search: {len(traces)} kernel(s) searched")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
