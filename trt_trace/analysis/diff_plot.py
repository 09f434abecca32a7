"""The picture of `trt-trace diff --plot`: the change per engine.

One row per engine, in the diff's order (largest change of total time first). Left: the change of
the engine's total time in ms (what the change costs the run as a whole). Right: the change of its
per-call p50 in %, with the threshold dashed, so a big engine that got a little slower and a small
one that got much slower both show. Red: slower (significant and beyond the threshold), green:
faster, grey: within noise or the threshold; hatched: an engine found in one trace only.
"""

from __future__ import annotations

from ..io.output_files import save_figure
from .diff import FASTER, SLOWER, TraceDiff

COLORS = {SLOWER: "#D55E00", FASTER: "#009E73", "same": "#999999"}
MAX_ENGINES = 40


def plot_diff(diff: TraceDiff, path: str, title: str) -> int:
    """Writes the figure to `path` (any format matplotlib knows); returns the rows drawn."""
    import matplotlib  # heavy (most of a second): only --plot pays for it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): no display is looked for

    engines = diff.engines[:MAX_ENGINES]
    n = len(engines)
    fig, (left, right) = plt.subplots(1, 2, sharey=True, figsize=(12, 1.6 + 0.45 * max(n, 1)), dpi=110)
    y = list(range(n))
    for i, e in enumerate(engines):
        call = e.durations[0]
        gated = [d for d in e.durations if d.duration in ("total", "gpu")]
        verdict = SLOWER if any(d.verdict == SLOWER for d in gated) else (
            FASTER if any(d.verdict == FASTER for d in gated) else "same")
        color = COLORS[verdict]
        hatch = "//" if e.only_in else None
        left.barh(i, e.total_change_ns / 1e6, color=color, hatch=hatch, edgecolor="black" if hatch else color)
        if call.p50_change_pct is not None:
            right.barh(i, call.p50_change_pct, color=color)
            outward = 3 if call.p50_change_pct >= 0 else -3  # beside the bar's end, outside it
            right.annotate(f"{call.p50_change_pct:+.1f}%", (call.p50_change_pct, i), xytext=(outward, 0),
                           textcoords="offset points", va="center", ha="left" if outward > 0 else "right",
                           fontsize=8)
        else:
            right.annotate(f"only in {e.only_in}", (0, i), xytext=(3, 0), textcoords="offset points",
                           va="center", fontsize=8)
    left.set_yticks(y, [e.engine for e in engines], fontsize=8)
    left.invert_yaxis()
    left.axvline(0, color="black", linewidth=0.8)
    right.axvline(0, color="black", linewidth=0.8)
    for x in (diff.threshold_pct, -diff.threshold_pct):
        right.axvline(x, color="black", linestyle="--", linewidth=0.8)
    left.set_xlabel("change of total time (ms), new - base")
    right.set_xlabel(f"change of per-call p50 (%); dashed: ±{diff.threshold_pct:g}%")
    slower = sum(1 for e in diff.engines if any(d.verdict == SLOWER and d.duration in ("total", "gpu")
                                                 for d in e.durations))
    fig.suptitle(f"{title}: {slower} engine(s) slower, of {len(diff.engines)}")
    fig.tight_layout()
    try:
        save_figure(fig, path)
    finally:
        plt.close(fig)
    return n
